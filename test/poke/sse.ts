/**
 * A Server-Sent Events reader for tests: collects a poke stream's events (blocks) as they come,
 * waits for the next one, and cancels the stream.
 */
export class EventReader {
  readonly blocks: string[] = [];
  readonly #reader: ReadableStreamDefaultReader<string>;
  #waiters: Array<() => void> = [];
  #ended = false;
  #buffer = '';

  constructor(body: ReadableStream<Uint8Array<ArrayBuffer>>) {
    this.#reader = body.pipeThrough(new TextDecoderStream()).getReader();
    void this.#read();
  }

  /** The pokes: blocks whose data is `poke`. */
  get pokes(): number {
    return this.blocks.filter((block) => block === 'data: poke').length;
  }

  /** Messages that are no poke (the stream's `open`), and any other data. */
  get otherMessages(): string[] {
    return this.blocks.filter((block) => /^data:/m.test(block) && block !== 'data: poke');
  }

  /** Blocks that are only comments: the opening and the heartbeats. */
  get comments(): number {
    return this.blocks.filter((block) => block.split('\n').every((line) => line.startsWith(':') || line.startsWith('retry:'))).length;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Resolves once `test()` holds (checked after each block), or rejects after `ms`. */
  async until(test: () => boolean, ms = 5_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!test()) {
      if (this.#ended) throw new Error(`The stream ended; blocks so far: ${JSON.stringify(this.blocks)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`Timed out; blocks so far: ${JSON.stringify(this.blocks)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => (clearTimeout(timer), resolve()));
      });
    }
  }

  cancel(): Promise<void> {
    return this.#reader.cancel();
  }

  async #read(): Promise<void> {
    try {
      for (let next = await this.#reader.read(); !next.done; next = await this.#reader.read()) {
        this.#buffer += next.value;
        for (let end = this.#buffer.indexOf('\n\n'); end >= 0; end = this.#buffer.indexOf('\n\n')) {
          this.blocks.push(this.#buffer.slice(0, end));
          this.#buffer = this.#buffer.slice(end + 2);
        }
        this.#wake();
      }
    } catch {
      // Cancelled or broken: ended either way.
    }
    this.#ended = true;
    this.#wake();
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}
