/**
 * A readers-writer lock: many shared holds or one exclusive, granted in arrival order so that
 * neither kind starves. The stores use it to keep their transactions from interleaving.
 */
export class ReadWriteLock {
  #shared = 0;
  #exclusive = false;
  #queue: Array<{ exclusive: boolean; grant: () => void }> = [];

  /** Runs `fn` once the lock is held (shared or exclusive), and releases it when `fn` settles. */
  async hold<T>(exclusive: boolean, fn: () => T | Promise<T>): Promise<T> {
    await new Promise<void>((grant) => {
      this.#queue.push({ exclusive, grant });
      this.#pump();
    });
    try {
      return await fn();
    } finally {
      if (exclusive) this.#exclusive = false;
      else this.#shared--;
      this.#pump();
    }
  }

  #pump(): void {
    for (let next = this.#queue[0]; next && !this.#exclusive && !(next.exclusive && this.#shared > 0); next = this.#queue[0]) {
      this.#queue.shift();
      if (next.exclusive) this.#exclusive = true;
      else this.#shared++;
      next.grant();
    }
  }
}
