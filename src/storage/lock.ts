import type { TransactionOptions, WriteLane } from './types.js';

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
  /** The locks of the spaces' deliveries lanes (`holdLane`); a space's own lock is its data lane's. */
  readonly #deliveries = new Map<string, ReadWriteLock>();

  /** Runs `fn` holding `space`'s lock (shared or exclusive), or every lock when `space` is undefined. */
  hold<T>(space: string | undefined, exclusive: boolean, fn: () => T | Promise<T>): Promise<T> {
    if (space === undefined) return this.#all.hold(true, fn);
    return this.#all.hold(false, () => this.#holdOne(this.#spaces, space, exclusive, fn));
  }

  async #holdOne<T>(locks: Map<string, ReadWriteLock>, space: string, exclusive: boolean, fn: () => T | Promise<T>): Promise<T> {
    let lock = locks.get(space);
    if (lock === undefined) locks.set(space, (lock = new ReadWriteLock()));
    try {
      return await lock.hold(exclusive, fn);
    } finally {
      // A space's lock lives only while someone holds or waits for it.
      if (lock.idle) locks.delete(space);
    }
  }

  /**
   * Runs `fn` holding the locks a read-write transaction of `space` in `lane` takes (see
   * `WriteLane`): that lane's alone, or both lanes' for a transaction of no lane. Both are
   * taken in one order, under one shared hold of the whole, so two holders never deadlock.
   */
  holdLane<T>(space: string | undefined, lane: WriteLane | undefined, fn: () => T | Promise<T>): Promise<T> {
    if (space === undefined) return this.hold(undefined, true, fn);
    if (lane === 'data') return this.hold(space, true, fn);
    if (lane === 'deliveries') return this.#all.hold(false, () => this.#holdOne(this.#deliveries, space, true, fn));
    return this.#all.hold(false, () => this.#holdOne(this.#spaces, space, true, () => this.#holdOne(this.#deliveries, space, true, fn)));
  }

  /**
   * Runs `fn` holding the deliveries lanes' locks of `spaces` (`lane` 'deliveries'), or their
   * spaces' own locks (undefined: a store that does not lock lanes apart), exclusively: taken in
   * sorted order under one shared hold of the whole, so that two holders of several never deadlock,
   * and a holder of one space never waits for a second.
   */
  holdMany<T>(spaces: readonly string[], lane: 'deliveries' | undefined, fn: () => T | Promise<T>): Promise<T> {
    const locks = lane === 'deliveries' ? this.#deliveries : this.#spaces;
    const held = [...new Set(spaces)].sort().reduceRight<() => Promise<T>>(
      (inner, space) => () => this.#holdOne(locks, space, true, inner),
      async () => fn(),
    );
    return this.#all.hold(false, held);
  }

  /** How many locks of spaces (or of their deliveries lanes) there are now: those held or waited for. */
  get size(): number {
    return this.#spaces.size + this.#deliveries.size;
  }
}

/**
 * The spaces of a transaction of several (`TransactionOptions.spaces`), checked: read-write, of
 * the deliveries lane, with no `space` beside them; undefined for a transaction of one or none.
 */
export function manySpacesOf({ readOnly, space, lane, spaces }: TransactionOptions): readonly string[] | undefined {
  if (spaces === undefined) return undefined;
  if (
    readOnly ||
    lane !== 'deliveries' ||
    space !== undefined ||
    !Array.isArray(spaces) ||
    spaces.length === 0 ||
    spaces.some((each) => typeof each !== 'string')
  ) {
    throw new TypeError(
      "A transaction of several spaces is read-write, of the deliveries lane, with a list of one or more spaces and no `space`: { readOnly: false, lane: 'deliveries', spaces }",
    );
  }
  return spaces;
}
