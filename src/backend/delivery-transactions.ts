import type { SyncContext } from '../context/context.js';
import type { Storage, StorageTransaction } from '../storage/types.js';

/**
 * The store transactions of webhook deliveries (each claim, each record of how an attempt went),
 * scheduled apart from the pushes': at most a few at once per store, so that deliveries keep
 * their hands off the connections pushes need, and, where the store runs one transaction over
 * several spaces' deliveries lanes (`Storage.manySpaces`), those that arrive while one runs go
 * together in the next, as group commit does for pushes: a webhook keeping up with changes
 * spread over a thousand spaces costs the store a transaction per batch of spaces, not two per
 * space.
 */

/**
 * Runs `work` in a transaction of `space`'s deliveries lane, alone or beside other spaces'
 * (each space at most once in one), and resolves with its result once committed. One whose
 * transaction with others failed runs again alone, so that one space's failure is its own.
 * `reads` are keys `work` reads first: a store with `getMany` reads a whole batch's in one go.
 */
export function inDeliveries<T>(ctx: SyncContext, space: string, work: (tx: StorageTransaction) => Promise<T>, reads: readonly string[] = []): Promise<T> {
  let queue = queues.get(ctx.storage);
  if (queue === undefined) queues.set(ctx.storage, (queue = new DeliveryQueue(ctx.storage)));
  return queue.add(space, work, reads);
}

interface Waiting {
  space: string;
  reads: readonly string[];
  work: (tx: StorageTransaction) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** One store's deliveries transactions: those waiting, and how many run. */
class DeliveryQueue {
  readonly #storage: Storage;
  readonly #waiting: Waiting[] = [];
  /** Spaces in a transaction now: a space's next work waits for the one after. */
  readonly #busy = new Set<string>();
  #running = 0;
  #pumping = false;

  constructor(storage: Storage) {
    this.#storage = storage;
  }

  add<T>(space: string, work: (tx: StorageTransaction) => Promise<T>, reads: readonly string[]): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#waiting.push({ space, reads, work, resolve: resolve as (value: unknown) => void, reject });
      // After what runs now: a group's claims, asked in one loop, then start as one transaction.
      if (!this.#pumping) {
        this.#pumping = true;
        queueMicrotask(() => {
          this.#pumping = false;
          this.#pump();
        });
      }
    });
  }

  /** Starts what may start: a batch of spaces not already in one, while fewer than the limit run. */
  #pump(): void {
    const together = this.#storage.manySpaces === true;
    while (this.#running < (together ? BATCHES_AT_ONCE : ONE_AT_A_TIME_AT_ONCE)) {
      const batch: Waiting[] = [];
      const spaces = new Set<string>();
      for (let i = 0; i < this.#waiting.length && batch.length < (together ? MAX_SPACES : 1); ) {
        const waiting = this.#waiting[i]!;
        if (this.#busy.has(waiting.space) || spaces.has(waiting.space)) {
          i++;
          continue;
        }
        spaces.add(waiting.space);
        batch.push(waiting);
        this.#waiting.splice(i, 1);
      }
      if (batch.length === 0) return;
      this.#running++;
      for (const space of spaces) this.#busy.add(space);
      void this.#run(batch).finally(() => {
        this.#running--;
        for (const space of spaces) this.#busy.delete(space);
        this.#pump();
      });
    }
  }

  async #run(batch: readonly Waiting[]): Promise<void> {
    if (batch.length > 1) {
      try {
        const spaces = batch.map(({ space }) => space);
        // Side by side: a database pipelines their reads. Each settles before the transaction ends, so none reads after its end.
        const results = await this.#storage.transaction(
          async (tx) => {
            // One round trip for what every work reads first; the store keeps what it read.
            if (tx.getMany) await tx.getMany(batch.flatMap(({ reads }) => reads));
            const settled = await Promise.allSettled(batch.map(({ work }) => work(tx)));
            for (const outcome of settled) if (outcome.status === 'rejected') throw outcome.reason;
            return settled.map((outcome) => (outcome as PromiseFulfilledResult<unknown>).value);
          },
          { readOnly: false, lane: 'deliveries', spaces },
        );
        for (const [i, { resolve }] of batch.entries()) resolve(results[i]);
        return;
      } catch {
        // Each alone, below: a space whose work the store refused fails by itself, and is told why.
      }
    }
    await inTurn(
      batch.map(
        ({ space, work, resolve, reject }) =>
          () =>
            this.#storage.transaction(work, { readOnly: false, space, lane: 'deliveries' }).then(resolve, reject),
      ),
      ONE_AT_A_TIME_AT_ONCE,
    );
  }
}

/** Runs `tasks`, `atOnce` at a time. */
async function inTurn(tasks: ReadonlyArray<() => Promise<void>>, atOnce: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) await tasks[next++]!();
  };
  await Promise.all(Array.from({ length: Math.min(atOnce, tasks.length) }, worker));
}

const queues = new WeakMap<Storage, DeliveryQueue>();

/** Spaces in one transaction, at most: a batch's transaction stays short. */
const MAX_SPACES = 100;
/** Transactions of several spaces running at once per store: one space's lane held by housekeeping holds up one of them, not every delivery. */
const BATCHES_AT_ONCE = 2;
/** Deliveries transactions at once per store where each is one space's: the rest of the store's connections stay with the pushes. */
const ONE_AT_A_TIME_AT_ONCE = 4;
