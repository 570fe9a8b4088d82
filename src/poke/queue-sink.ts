import type { Sink } from '../base/direct-stream.js';

/** Chunks a stream may have unread before pokes to it are dropped (a later read gets the newest). */
const POKE_BACKLOG = 4;

/**
 * A poke stream's sink until an adapter takes the stream over: its web stream's queue. What it
 * queued is also kept, until a reader first reads, so that an adapter that attaches instead gets
 * it all, in order. Nothing reads the queue then, so `full` and `waiting` bound what is kept to a
 * few small chunks, as they bound the queue.
 */
export class QueueSink implements Sink {
  readonly #controller: ReadableStreamDefaultController<Uint8Array>;
  #held: Uint8Array[] | undefined = [];
  #ended = false;

  constructor(controller: ReadableStreamDefaultController<Uint8Array>) {
    this.#controller = controller;
  }

  get waiting(): boolean {
    return (this.#controller.desiredSize ?? 0) <= 0;
  }

  get full(): boolean {
    return (this.#controller.desiredSize ?? 0) <= -POKE_BACKLOG;
  }

  write(chunk: Uint8Array): void {
    try {
      // A copy: a runtime may detach a chunk it writes, and one array goes to every stream.
      this.#controller.enqueue(chunk.slice());
      this.#held?.push(chunk);
    } catch {
      // Closed or errored by its reader a moment ago; its cancel removes it.
    }
  }

  end(): void {
    this.#ended = true;
    try {
      this.#controller.close();
    } catch {
      // Already closed or errored by its reader.
    }
  }

  /** A reader has begun: no adapter will take the stream over, and nothing need be kept. */
  reading(): void {
    this.#held = undefined;
  }

  /** Writes what the queue holds into `sink`, which takes the stream over, and ends it if this one was. */
  handOver(sink: Sink): void {
    for (const chunk of this.#held ?? []) sink.write(chunk);
    this.#held = undefined;
    if (this.#ended) sink.end();
  }
}
