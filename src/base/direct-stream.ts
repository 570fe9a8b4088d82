/**
 * Where a {@link DirectStream}'s producer writes once an adapter has taken the stream over: the
 * socket itself, or (until then, and for every other reader) the web stream's own queue.
 */
export interface Sink {
  /** Sends `chunk` now; the sink may keep it until it is sent, so it must not change. */
  write(chunk: Uint8Array): void;
  /** Ends the body after what was written. */
  end(): void;
  /** Something written is still waiting for its reader (the client, or the kernel's buffer, is behind). */
  readonly waiting: boolean;
  /** The reader is so far behind that more would only queue: a chunk that a later one stands for can be left out. */
  readonly full: boolean;
}

/**
 * A body stream an adapter may write to its socket without reading it: {@link attach} hands the
 * producer a {@link Sink} on the socket, and the web stream is never read. A poke goes to
 * thousands of streams at once, and a web stream's queue, its read promise and the reader's loop
 * cost more per chunk than the socket's write; the stream itself is let go, so an idle one costs
 * less too. Any other reader reads it as a plain `ReadableStream`.
 */
export class DirectStream extends ReadableStream<Uint8Array> {
  readonly #attach: (sink: Sink) => () => void;

  constructor(source: UnderlyingDefaultSource<Uint8Array>, attach: (sink: Sink) => () => void) {
    super(source);
    this.#attach = attach;
  }

  /**
   * Sends what this stream holds and everything after it to `sink` instead; call what it returns
   * once the client has gone, in place of cancelling. Call it once, before any read.
   */
  attach(sink: Sink): () => void {
    return this.#attach(sink);
  }
}
