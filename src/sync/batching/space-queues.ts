import type { Storage } from '../../storage/types.js';

/**
 * Work queued per store and space, run a batch at a time: the first item of an idle space starts
 * at once, and the items that arrive while a batch runs make the next one (at most `maxBatch`,
 * so that no batch grows without bound under load). Group commit (group-commit.ts) and shared
 * reads (shared-reads.ts) are both this queue, with their own way of running a batch.
 */
export class SpaceQueues<T> {
  /** Items waiting, per store and space; the first entry of a queue is running or about to. */
  readonly #queues = new WeakMap<Storage, Map<string, T[]>>();
  readonly #run: (storage: Storage, space: string, batch: readonly T[]) => Promise<void>;
  readonly #maxBatch: number;

  /** `run` settles every item of its batch itself, and never rejects. */
  constructor(run: (storage: Storage, space: string, batch: readonly T[]) => Promise<void>, maxBatch: number) {
    this.#run = run;
    this.#maxBatch = maxBatch;
  }

  add(storage: Storage, space: string, item: T): void {
    let spaces = this.#queues.get(storage);
    if (spaces === undefined) this.#queues.set(storage, (spaces = new Map()));
    let queue = spaces.get(space);
    if (queue === undefined) spaces.set(space, (queue = []));
    queue.push(item);
    if (queue.length === 1) void this.#drain(storage, space, spaces, queue);
  }

  async #drain(storage: Storage, space: string, spaces: Map<string, T[]>, queue: T[]): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.slice(0, this.#maxBatch);
      await this.#run(storage, space, batch);
      // Items that arrived meanwhile stay queued for the next round.
      queue.splice(0, batch.length);
    }
    spaces.delete(space);
  }
}
