import { HTTPError } from '../server/errors.js';
import { countPokeStreams } from '../server/telemetry.js';
import type { Notifier, Unsubscribe } from './notifier.js';

/** How pokes are sent: see {@link SyncContext.pokes}. */
export interface PokeOptions {
  /** Where changes are heard and announced. Default: this process only (one notifier per store). */
  notifier?: Notifier;
  /** Milliseconds between heartbeats on an idle stream, so proxies keep it open. Default: 15,000. */
  heartbeatMs?: number;
  /**
   * Pokes of one space are at least this many milliseconds apart: the first change of a burst
   * pokes at once, the rest of it once more when the time is up. Default: 50.
   */
  coalesceMs?: number;
  /** Poke streams this context keeps open at once; past it, 503 with `Retry-After`. Default: 20,000. */
  maxStreams?: number;
}

const encoder = new TextEncoder();
// `retry` sets how soon a browser's EventSource reconnects; the comment makes the first bytes.
const OPENING = encoder.encode('retry: 1000\n: viewsync pokes\n\n');
// A message with data: an EventSource dispatches no event whose data is empty.
const POKE = encoder.encode('data: poke\n\n');
const HEARTBEAT = encoder.encode(':\n\n');
/** Chunks a stream may have unread before pokes to it are dropped (a later read gets the newest). */
const POKE_BACKLOG = 4;
/** Streams poked before other work gets a turn. */
const POKE_SLICE = 500;

/**
 * The open poke streams of one context, by space. A space is subscribed to the notifier while
 * it has streams, and unsubscribed when its last one closes; one timer beats for every stream.
 * Every chunk a stream can hold is small and few, so a client that stops reading costs a few
 * bytes until the heartbeat after next closes its stream.
 */
export class PokeHub {
  readonly #notifier: Notifier;
  readonly #heartbeatMs: number;
  readonly #coalesceMs: number;
  readonly #maxStreams: number;
  readonly #spaces = new Map<string, Space>();
  #streams = 0;
  #heartbeat: ReturnType<typeof setInterval> | undefined;

  constructor(notifier: Notifier, options: PokeOptions) {
    this.#notifier = notifier;
    this.#heartbeatMs = options.heartbeatMs ?? 15_000;
    this.#coalesceMs = options.coalesceMs ?? 50;
    this.#maxStreams = options.maxStreams ?? 20_000;
  }

  /** Streams open or opening. */
  get streams(): number {
    return this.#streams;
  }

  /** Spaces with streams, each subscribed to the notifier. */
  get spaces(): number {
    return this.#spaces.size;
  }

  /** A new stream of `space`'s pokes; resolves once a change can no longer be missed. */
  async open(space: string): Promise<ReadableStream<Uint8Array>> {
    if (this.#streams >= this.#maxStreams) {
      throw new HTTPError(503, `This server already has ${this.#maxStreams} poke streams open (pokes.maxStreams); try again later`, { headers: { 'retry-after': '10' } });
    }
    const entry = this.#spaces.get(space) ?? this.#subscribe(space);
    entry.opening++;
    this.#streams++;
    countPokeStreams(1);
    try {
      await entry.ready;
    } catch (error) {
      this.#release(entry);
      throw new HTTPError(503, 'Pokes cannot be delivered right now (the notifier failed); try again later', { headers: { 'retry-after': '5' }, cause: error });
    } finally {
      entry.opening--;
    }
    let stream!: Stream;
    this.#beat();
    return new ReadableStream<Uint8Array>({
      start: (controller) => {
        stream = { controller, stale: false };
        entry.streams.add(stream);
        controller.enqueue(OPENING.slice());
      },
      cancel: () => {
        if (entry.streams.delete(stream)) this.#release(entry);
      },
    });
  }

  /**
   * Ends every open stream, each with an SSE `retry` field first: how many milliseconds its
   * client waits before it reconnects, between half and one and a half of `retryMs`.
   */
  closeAll(retryMs: number): void {
    for (const entry of [...this.#spaces.values()]) {
      for (const stream of [...entry.streams]) {
        entry.streams.delete(stream);
        this.#release(entry);
        offer(stream.controller, encoder.encode(`retry: ${Math.round(retryMs * (0.5 + Math.random()))}\n\n`));
        closeQuietly(stream.controller);
      }
    }
  }

  #subscribe(space: string): Space {
    const entry: Space = { space, streams: new Set(), opening: 0, ready: undefined!, unsubscribe: undefined, timer: undefined, again: false };
    const subscribed = Promise.resolve().then(() => this.#notifier.subscribe(space, () => this.#changed(entry)));
    entry.ready = subscribed.then((unsubscribe) => (entry.unsubscribe = unsubscribe)).catch((error: unknown) => {
      // The next stream of this space tries again.
      if (this.#spaces.get(space) === entry) this.#spaces.delete(space);
      throw error;
    });
    this.#spaces.set(space, entry);
    return entry;
  }

  /** One stream of `entry` closed, or never opened: let go of the space once it has none. */
  #release(entry: Space): void {
    this.#streams--;
    countPokeStreams(-1);
    // Whichever stream was last, and whatever became of its space (one whose subscription
    // failed is gone already): nothing is left to beat for.
    if (this.#streams === 0) {
      clearInterval(this.#heartbeat);
      this.#heartbeat = undefined;
    }
    if (entry.streams.size > 0 || entry.opening > 0 || this.#spaces.get(entry.space) !== entry) return;
    this.#spaces.delete(entry.space);
    clearTimeout(entry.timer);
    if (entry.unsubscribe) entry.unsubscribe();
    else entry.ready.then((unsubscribe: Unsubscribe) => unsubscribe(), () => {});
  }

  /** Pokes at the first change, then at most once per `coalesceMs` while changes keep coming. */
  #changed(entry: Space): void {
    if (entry.timer !== undefined) {
      entry.again = true;
      return;
    }
    sendInSlices([...entry.streams]);
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      if (entry.again) {
        entry.again = false;
        this.#changed(entry);
      }
    }, this.#coalesceMs);
  }

  #beat(): void {
    if (this.#heartbeat !== undefined) return;
    this.#heartbeat = setInterval(() => {
      for (const entry of [...this.#spaces.values()]) {
        for (const stream of [...entry.streams]) {
          const unread = (stream.controller.desiredSize ?? 0) <= 0;
          // Unread since the last beat too: nobody is reading it (a client that hung up where the
          // runtime never said so, a Response dropped unread). Closing it lets it be collected.
          if (unread && stream.stale) {
            entry.streams.delete(stream);
            this.#release(entry);
            closeQuietly(stream.controller);
            continue;
          }
          stream.stale = unread;
          if (!unread) offer(stream.controller, HEARTBEAT);
        }
      }
    }, this.#heartbeatMs);
    // A process with nothing else to do may exit although streams are open.
    (this.#heartbeat as { unref?: () => void }).unref?.();
  }
}

interface Space {
  space: string;
  streams: Set<Stream>;
  /** Streams waiting for the subscription. */
  opening: number;
  ready: Promise<Unsubscribe>;
  /** Set once subscribed. */
  unsubscribe: Unsubscribe | undefined;
  /** The coalescing window, while one is open; `again` when a change came during it. */
  timer: ReturnType<typeof setTimeout> | undefined;
  again: boolean;
}

interface Stream {
  controller: ReadableStreamDefaultController<Uint8Array>;
  /** It still had unread chunks at the last heartbeat. */
  stale: boolean;
}

/**
 * Pokes streams a slice at a time, letting I/O in between: each poke is a socket write, and a
 * space with many thousands of streams would otherwise hold the event loop for its whole list.
 */
function sendInSlices(streams: readonly Stream[], from = 0): void {
  const end = Math.min(streams.length, from + POKE_SLICE);
  for (let i = from; i < end; i++) {
    const { controller } = streams[i]!;
    if ((controller.desiredSize ?? 0) > -POKE_BACKLOG) offer(controller, POKE);
  }
  if (end < streams.length) setTimeout(() => sendInSlices(streams, end), 0);
}

/** Enqueues a copy: a runtime may detach a chunk it writes, and one array goes to every stream. */
function offer(controller: ReadableStreamDefaultController<Uint8Array>, bytes: Uint8Array): void {
  try {
    controller.enqueue(bytes.slice());
  } catch {
    // Closed or errored by its reader a moment ago; its cancel removes it.
  }
}

function closeQuietly(controller: ReadableStreamDefaultController<Uint8Array>): void {
  try {
    controller.close();
  } catch {
    // Already closed or errored by its reader.
  }
}
