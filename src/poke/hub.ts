import type { LiveStats } from '../telemetry/live.js';
import { HTTPError } from '../base/errors.js';
import { countPokeStreams } from '../telemetry/telemetry.js';
import type { ChangeDetail, Notifier, Unsubscribe } from './notifier.js';
import type { ViewInterest } from '../sync/interest.js';
import type { Prefixes } from '../sync/version/prefixes.js';
import { DirectStream, type Sink } from '../base/direct-stream.js';
import { GroupInterests } from './interests.js';
import type { PokeOptions } from './options.js';
import { QueueSink } from './queue-sink.js';

export type { PokeOptions } from './options.js';

const encoder = new TextEncoder();
/** A delay drawn evenly from `[low, high)`, so that clients told to reconnect do not all come at once. */
const between = (low: number, high: number) => low + Math.random() * (high - low);
// `retry` sets how soon a browser's EventSource reconnects; the comment makes the first bytes.
// Then a message, `open`, once the space is listened to: an app that pulls on every message
// (`onmessage`) pulls after each reconnect too, and so sees what changed while its stream was
// away (a restart, a deploy), which no poke will tell it.
const OPENING = encoder.encode('retry: 1000\n: viewsync pokes\n\ndata: open\n\n');
// A message with data: an EventSource dispatches no event whose data is empty.
const POKE = encoder.encode('data: poke\n\n');
const HEARTBEAT = encoder.encode(':\n\n');
/**
 * A refused stream's connection closes: kept alive, each would hold a descriptor for the
 * keep-alive timeout, and a flood of them spends the process's descriptors as streams would.
 */
const REFUSED = { 'retry-after': '10', connection: 'close' };
/** Streams poked before other work gets a turn. */
const POKE_SLICE = 500;
/** Keys and groups a coalescing window remembers; past them it pokes every stream, as for a change of unknown reach. */
const MAX_OWED = 256;
/** Owed to a space whose changes during a coalescing window include one of unknown reach. */
const ALL = 'all';

/**
 * The open poke streams of one context, by space and by user. A space is subscribed to the
 * notifier while it has streams, and unsubscribed when its last one closes; one timer beats for
 * every stream and ends those past their age. Every chunk a stream can hold is small and few, so
 * a client that stops reading costs a few bytes until the heartbeat after next closes its stream
 * (or, where the kernel takes the heartbeats unread, until its age).
 */
export class PokeHub {
  readonly #notifier: Notifier;
  readonly #heartbeatMs: number;
  readonly #coalesceMs: number;
  #maxStreams: number;
  /** Whether the options named `maxStreams` (then the process's descriptor limit does not lower it). */
  readonly #maxStreamsGiven: boolean;
  readonly #maxPerUser: number;
  readonly #maxAgeMs: number;
  readonly #spaces = new Map<string, Space>();
  /** Each user's streams, open (oldest first) or opening. */
  readonly #users = new Map<string, User>();
  #streams = 0;
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  /** What each client group's last pull under a view depends on (see {@link pulling}). */
  readonly #interests = new GroupInterests();
  /** Whether a stream was ever opened: until one is, no pull's interest is worth recording. */
  #opened = false;
  /** The inspector's live numbers, told how many pokes each change sends. */
  readonly #live: LiveStats | undefined;

  /** `options` as createContext resolves them: every default filled in, but `maxStreams`, which is the hub's (see {@link fitToDescriptors}). */
  constructor(notifier: Notifier, options: HubSettings, live?: LiveStats) {
    this.#notifier = notifier;
    this.#live = live;
    this.#heartbeatMs = options.heartbeatMs;
    this.#coalesceMs = options.coalesceMs;
    this.#maxStreamsGiven = options.maxStreams !== undefined;
    this.#maxStreams = options.maxStreams ?? DEFAULT_MAX_STREAMS;
    this.#maxPerUser = options.maxStreamsPerUser;
    this.#maxAgeMs = options.maxStreamAgeMs;
  }

  /**
   * Lowers the stream cap, unless the options named one, to what a process limited to
   * `descriptors` open files can hold beside its other connections and files: three quarters of
   * it, less 100. Adapters call it with the limit they read, for the context they serve.
   */
  fitToDescriptors(descriptors: number | undefined): void {
    if (this.#maxStreamsGiven || descriptors === undefined || !(descriptors > 0)) return;
    this.#maxStreams = Math.max(16, Math.min(DEFAULT_MAX_STREAMS, Math.floor(descriptors * 0.75) - 100));
  }

  /** Streams open or opening. */
  get streams(): number {
    return this.#streams;
  }

  /** Spaces with streams, each subscribed to the notifier. */
  get spaces(): number {
    return this.#spaces.size;
  }

  /** Streams of `user` open or opening. */
  streamsOf(user: string): number {
    const entry = this.#users.get(user);
    return entry ? entry.opening + entry.streams.size : 0;
  }

  /**
   * A new stream of `space`'s pokes for `user` (undefined: no `authenticate`); resolves once a
   * change can no longer be missed. `listen` narrows what it is poked for (see {@link Listen}).
   */
  async open(space: string, user?: string, listen: Listen = {}): Promise<DirectStream> {
    const owner = this.#admit(user);
    this.#opened = true;
    const entry = this.#spaces.get(space) ?? this.#subscribe(space);
    entry.opening++;
    if (owner) owner.opening++;
    this.#streams++;
    countPokeStreams(1);
    try {
      await entry.ready;
    } catch (error) {
      this.#release(entry, owner);
      throw new HTTPError(503, 'Pokes cannot be delivered right now (the notifier failed); try again later', { headers: { 'retry-after': '5' }, cause: error });
    } finally {
      entry.opening--;
      if (owner) owner.opening--;
    }
    let stream!: Stream;
    let queue!: QueueSink;
    this.#beat();
    return new DirectStream(
      {
        start: (controller) => {
          const expires = Date.now() + this.#maxAgeMs * (0.75 + Math.random() / 4);
          queue = new QueueSink(controller);
          stream = { sink: queue, stale: false, space: entry, owner, expires, user, ...listen };
          entry.streams.add(stream);
          owner?.streams.add(stream);
          queue.write(OPENING);
        },
        // Called only once a reader reads: the opening fills the queue until then.
        pull: () => queue.reading(),
        cancel: () => this.#drop(stream),
      },
      (sink) => {
        stream.sink = sink;
        queue.handOver(sink);
        return () => this.#drop(stream);
      },
    );
  }

  /**
   * Marks a pull of `user`'s `group` under way; call what it returns with what its answer depends
   * on (see {@link GroupInterests.pulling}). Undefined while no stream was ever opened here: the
   * hub is made with its context, and a server whose clients take no pokes from it should not pay
   * for recording what their views read.
   */
  pulling(space: string, user: string | undefined, group: string): ((interest?: ViewInterest) => void) | undefined {
    if (!this.#opened) return undefined;
    return this.#interests.pulling(space, user, group);
  }

  /**
   * Ends every open stream, each with an SSE `retry` field first: how many milliseconds its
   * client waits before it reconnects, between a quarter of `retryMs` and all of it.
   */
  closeAll(retryMs: number): void {
    for (const entry of [...this.#spaces.values()]) {
      for (const stream of [...entry.streams]) this.#end(stream, between(retryMs / 4, retryMs));
    }
  }

  /**
   * Checks the caps before a stream opens: the user's own, then the context's, where a user
   * lighter than the heaviest by two or more takes the heaviest's oldest stream. So one user at
   * the cap, or a few, never keep another out; the heaviest is found by a walk over the users,
   * which only a full context pays for.
   */
  #admit(user: string | undefined): User | undefined {
    const count = user === undefined ? 0 : this.streamsOf(user);
    if (user !== undefined && count >= this.#maxPerUser) {
      throw new HTTPError(429, `This user already has ${this.#maxPerUser} poke streams open (pokes.maxStreamsPerUser); close one or try again later`, {
        headers: REFUSED,
      });
    }
    if (this.#streams >= this.#maxStreams) {
      const heaviest = user === undefined ? undefined : this.#heaviest();
      const oldest = heaviest && heaviest.streams.size - 1 > count ? heaviest.streams.values().next().value : undefined;
      if (oldest === undefined) {
        throw new HTTPError(503, `This server already has ${this.#maxStreams} poke streams open (pokes.maxStreams); try again later`, { headers: REFUSED });
      }
      this.#end(oldest, between(5_000, 15_000));
    }
    if (user === undefined) return undefined;
    let entry = this.#users.get(user);
    if (entry === undefined) this.#users.set(user, (entry = { name: user, opening: 0, streams: new Set() }));
    return entry;
  }

  #heaviest(): User | undefined {
    let heaviest: User | undefined;
    for (const entry of this.#users.values()) if (!heaviest || entry.streams.size > heaviest.streams.size) heaviest = entry;
    return heaviest;
  }

  #subscribe(space: string): Space {
    const entry: Space = { space, streams: new Set(), opening: 0, ready: undefined!, unsubscribe: undefined, timer: undefined, owed: undefined };
    const subscribed = Promise.resolve().then(() => this.#notifier.subscribe(space, (detail) => this.#changed(entry, detail)));
    entry.ready = subscribed
      .then((unsubscribe) => (entry.unsubscribe = unsubscribe))
      .catch((error: unknown) => {
        // The next stream of this space tries again.
        if (this.#spaces.get(space) === entry) this.#spaces.delete(space);
        throw error;
      });
    this.#spaces.set(space, entry);
    return entry;
  }

  /** Ends `stream` here, telling its client to reconnect after `retryMs` when given (each caller spreads its own). */
  #end(stream: Stream, retryMs?: number): void {
    this.#drop(stream);
    if (retryMs !== undefined) stream.sink.write(encoder.encode(`retry: ${Math.round(retryMs)}\n\n`));
    stream.sink.end();
  }

  /** Forgets an open stream, once: it is ended here, or its reader cancelled it. */
  #drop(stream: Stream): void {
    if (!stream.space.streams.delete(stream)) return;
    stream.owner?.streams.delete(stream);
    this.#release(stream.space, stream.owner);
  }

  /** One stream closed, or never opened: let go of its space and user once they have none. */
  #release(entry: Space, owner: User | undefined): void {
    this.#streams--;
    countPokeStreams(-1);
    if (owner && owner.streams.size === 0 && owner.opening === 0) this.#users.delete(owner.name);
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
    else
      entry.ready.then(
        (unsubscribe: Unsubscribe) => unsubscribe(),
        () => {},
      );
  }

  /**
   * Pokes at the first change, then at most once per `coalesceMs` while changes keep coming,
   * each time the streams the changes concern (`detail`; undefined: every stream).
   */
  #changed(entry: Space, detail?: ChangeDetail): void {
    if (entry.timer !== undefined) {
      entry.owed = entry.owed === undefined ? (detail ?? ALL) : joined(entry.owed, detail);
      return;
    }
    const concerned = detail === undefined ? [...entry.streams] : [...entry.streams].filter((stream) => this.#concerns(stream, detail));
    // A poked group's client pulls, maybe through another instance: what it holds is unknown
    // here until one of its pulls ends here, so its streams get every poke till then.
    for (const stream of concerned) if (stream.group !== undefined) this.#interests.poked(entry.space, stream.user, stream.group);
    this.#live?.count('pokes', concerned.length);
    sendInSlices(concerned);
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      const owed = entry.owed;
      entry.owed = undefined;
      if (owed !== undefined) this.#changed(entry, owed === ALL ? undefined : owed);
    }, this.#coalesceMs);
  }

  /** Whether a change that touched `detail` concerns `stream`, which then pulls. */
  #concerns(stream: Stream, detail: ChangeDetail): boolean {
    const { group, topics } = stream;
    // A pushing group learns its lastMutationIDs by pulling, whatever its push wrote.
    if (group !== undefined && detail.groups.some((pusher) => pusher.clientGroupID === group && pusher.userID === stream.user)) return true;
    if (topics !== undefined) return detail.keys.some((key) => topics.covers(key));
    if (group === undefined) return true;
    return this.#interests.concerns(stream.space.space, stream.user, group, detail.keys);
  }

  #beat(): void {
    if (this.#heartbeat !== undefined) return;
    this.#heartbeat = setInterval(() => {
      const now = Date.now();
      for (const entry of [...this.#spaces.values()]) {
        for (const stream of [...entry.streams]) {
          if (now >= stream.expires) {
            this.#end(stream, between(500, 1_500));
            continue;
          }
          const unread = stream.sink.waiting;
          // Unread since the last beat too: nobody is reading it (a client that hung up where the
          // runtime never said so, a Response dropped unread). Closing it lets it be collected.
          if (unread && stream.stale) {
            this.#end(stream);
            continue;
          }
          stream.stale = unread;
          if (!unread) stream.sink.write(HEARTBEAT);
        }
      }
    }, this.#heartbeatMs);
    // A process with nothing else to do may exit although streams are open.
    (this.#heartbeat as { unref?: () => void }).unref?.();
  }
}

/** The poke settings a hub works by (createContext's, defaults filled in). */
export type HubSettings = Required<Pick<PokeOptions, 'heartbeatMs' | 'coalesceMs' | 'maxStreamsPerUser' | 'maxStreamAgeMs'>> & Pick<PokeOptions, 'maxStreams'>;

/** Poke streams a hub keeps open at once, unless `pokes.maxStreams` or the process's descriptor limit says less. */
export const DEFAULT_MAX_STREAMS = 20_000;

interface Space {
  space: string;
  streams: Set<Stream>;
  /** Streams waiting for the subscription. */
  opening: number;
  ready: Promise<Unsubscribe>;
  /** Set once subscribed. */
  unsubscribe: Unsubscribe | undefined;
  /** The coalescing window, while one is open; `owed`, what the changes during it touched. */
  timer: ReturnType<typeof setTimeout> | undefined;
  owed: ChangeDetail | typeof ALL | undefined;
}

/**
 * What a stream is poked for: every change of its space unless it says otherwise.
 * - `group`: the client group it serves. Its own pushes always poke it; under a view, other
 *   changes poke it only when they touch what its last pull depended on (see `pulling`).
 * - `topics`: key prefixes (whole segments, as a view's); only changes under them poke it.
 */
export interface Listen {
  group?: string | undefined;
  topics?: Prefixes | undefined;
}

interface Stream extends Listen {
  /** Its web stream's queue, or the socket once an adapter has taken it over. */
  sink: Sink;
  /** Who opened it (undefined: no `authenticate`). */
  user: string | undefined;
  /** It still had unread chunks at the last heartbeat. */
  stale: boolean;
  space: Space;
  owner: User | undefined;
  /** When its age is up (epoch milliseconds). */
  expires: number;
}

interface User {
  name: string;
  /** Streams waiting for their space's subscription. */
  opening: number;
  /** Open streams, oldest first. */
  streams: Set<Stream>;
}

/**
 * Pokes streams a slice at a time, letting I/O in between: each poke is a socket write, and a
 * space with many thousands of streams would otherwise hold the event loop for its whole list.
 */
function sendInSlices(streams: readonly Stream[], from = 0): void {
  const end = Math.min(streams.length, from + POKE_SLICE);
  for (let i = from; i < end; i++) {
    const { sink, space } = streams[i]!;
    // One closed or ended since the poke began is skipped: its sink may be written no more.
    if (space.streams.has(streams[i]!) && !sink.full) sink.write(POKE);
  }
  if (end < streams.length) soon(() => sendInSlices(streams, end));
}

/**
 * Runs `task` once pending I/O has had its turn: `setImmediate` where the runtime has it, as
 * `setTimeout(0)` waits a millisecond at least (18 of them to poke 9,000 streams); a timer elsewhere.
 */
const immediate = (globalThis as { setImmediate?: (task: () => void) => unknown }).setImmediate;
const soon = (task: () => void): void => void (immediate ? immediate(task) : setTimeout(task, 0));

/** What two changes touched together. */
function joined(owed: ChangeDetail | typeof ALL, detail: ChangeDetail | undefined): ChangeDetail | typeof ALL {
  if (owed === ALL || detail === undefined || owed.keys.length + detail.keys.length + owed.groups.length + detail.groups.length > MAX_OWED) return ALL;
  return { keys: [...owed.keys, ...detail.keys], groups: [...owed.groups, ...detail.groups] };
}
