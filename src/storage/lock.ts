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
    if (this.#queue.length === 0 && !this.#exclusive && !(exclusive && this.#shared > 0)) {
      // Free now and nobody waiting: take it without a round through the queue.
      if (exclusive) this.#exclusive = true;
      else this.#shared++;
    } else {
      await new Promise<void>((grant) => {
        this.#queue.push({ exclusive, grant });
        this.#pump();
      });
    }
    try {
      return await fn();
    } finally {
      if (exclusive) this.#exclusive = false;
      else this.#shared--;
      this.#pump();
    }
  }

  /** Whether nobody holds the lock or waits for it. */
  get idle(): boolean {
    return !this.#exclusive && this.#shared === 0 && this.#queue.length === 0;
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

/**
 * A readers-writer lock per space, for stores whose transactions name their space: transactions
 * of one space exclude each other as one lock would, while other spaces go on. A transaction of
 * no space may touch anything, so it waits for every space and holds them all.
 */
export class SpaceLocks {
  readonly #all = new ReadWriteLock();
  readonly #spaces = new Map<string, ReadWriteLock>();

  /** Runs `fn` holding `space`'s lock (shared or exclusive), or every lock when `space` is undefined. */
  hold<T>(space: string | undefined, exclusive: boolean, fn: () => T | Promise<T>): Promise<T> {
    if (space === undefined) return this.#all.hold(true, fn);
    return this.#all.hold(false, async () => {
      let lock = this.#spaces.get(space);
      if (lock === undefined) this.#spaces.set(space, (lock = new ReadWriteLock()));
      try {
        return await lock.hold(exclusive, fn);
      } finally {
        // A space's lock lives only while someone holds or waits for it.
        if (lock.idle) this.#spaces.delete(space);
      }
    });
  }

  /** How many spaces have a lock now: those held or waited for. */
  get size(): number {
    return this.#spaces.size;
  }
}
