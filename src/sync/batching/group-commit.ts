import type { Storage, StorageTransaction, WriteLane } from '../../storage/types.js';
import { WriteBuffer } from '../../storage/write-buffer.js';
import { SpaceQueues } from './space-queues.js';
import { ReadAhead } from './read-ahead.js';
import { type Context, activeContext, inContext, recordBatchCommit } from '../../telemetry/telemetry.js';

/**
 * A piece of work inside a shared read-write transaction: what it resolves to, and whether its
 * writes stay. A job that throws fails the whole transaction (a store error); a refusal of its
 * own (a 400, ClientStateNotFound) is `keep: false`, which drops its writes alone.
 */
export type Job<T> = (tx: StorageTransaction, batch: BatchInfo) => Promise<{ result: T; keep: boolean }>;

/** The transaction a job ran in: how many jobs shared it, and how long this one waited for it. */
export interface BatchInfo {
  size: number;
  waitedMs: number;
}

/**
 * Group commit: runs `job` in a read-write transaction of `space`, together with the jobs that
 * arrived for that space while its previous transaction ran. A space's pushes are serialised
 * anyway (the version rule), so while one transaction holds the space, the pushes that queue
 * behind it cost one transaction between them instead of one each: on a database, one lock, one
 * commit and one flush for many pushes. Each job writes into a buffer of its own, kept only when
 * the job says so, so one push's refusal never touches another's writes; they run in arrival
 * order, each seeing the writes of those before it. `reads` are keys the job reads first: a
 * store with `getMany` fetches a whole batch's in one go. With a `name` (a client group's), the
 * keys the job's last namesake read beyond them are fetched with them (read-ahead.ts).
 */
export function runBatched<T>(storage: Storage, space: string, job: Job<T>, { reads = [], name, lane }: BatchOptions = {}): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    queues.add(storage, space, {
      job: job as Job<unknown>,
      reads,
      name,
      lane,
      queued: performance.now(),
      context: activeContext(),
      resolve: resolve as (value: unknown) => void,
      reject,
    });
  });
}

/** Options for {@link runBatched}. */
export interface BatchOptions {
  /** Keys the job reads first. */
  reads?: readonly string[];
  /** What the job's reads are learned under (a client group's name). */
  name?: string | undefined;
  /**
   * The lane of the space the job writes (`WriteLane`): `'data'` for a push or `transact`,
   * which then never waits for a webhook's delivery. A batch runs in the lane all its jobs share,
   * else in the whole space.
   */
  lane?: WriteLane;
}

interface Waiting {
  job: Job<unknown>;
  /** Keys the job reads first, fetched for the whole batch at once where the store can. */
  reads: readonly string[];
  /** What its reads are learned under for read-ahead; undefined: not learned. */
  name: string | undefined;
  lane: WriteLane | undefined;
  /** When it arrived (performance.now), and the trace context it arrived in, which its job runs in. */
  queued: number;
  context: Context;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** Runs a batch of jobs in one transaction, settling each. */
async function runBatch(storage: Storage, space: string, batch: readonly Waiting[]): Promise<void> {
  try {
    settle(batch, await commit(storage, space, batch));
  } catch (error) {
    // One job's write the store refused (a row too long, a constraint) fails the whole
    // transaction: run each job alone, so that only its own push fails, on every retry. A store
    // that is down fails each of them quickly.
    if (batch.length === 1) batch[0]!.reject(error);
    else for (const waiting of batch) await commit(storage, space, [waiting]).then((results) => settle([waiting], results), waiting.reject);
  }
}

/** The jobs waiting per store and space, at most 256 to a transaction, so that none grows without bound under load. */
const queues = new SpaceQueues<Waiting>(runBatch, 256);
/** What named jobs read last time, per store. */
const readAhead = new ReadAhead();

/** Runs `batch`'s jobs in one transaction of `space`; resolves with their results once committed. */
function commit(storage: Storage, space: string, batch: readonly Waiting[]): Promise<unknown[]> {
  return storage.transaction(
    async (tx) => {
      // The wait includes the store's own lock, taken before this function runs.
      const started = performance.now();
      const waited = batch.map(({ queued }) => started - queued);
      recordBatchCommit(batch.length, waited);
      // One round trip for what every job reads first, and what each read last time; a store
      // keeps what it read.
      if (tx.getMany) {
        const reads = [
          ...new Set([
            ...batch.flatMap((waiting) => waiting.reads),
            ...readAhead.keys(
              storage,
              space,
              batch.map(({ name }) => name),
            ),
          ]),
        ];
        if (reads.length > 0) await tx.getMany(reads);
      }
      const out: unknown[] = [];
      for (const [i, { job, context, name, reads }] of batch.entries()) {
        const read = name === undefined || !tx.getMany ? undefined : new Set<string>();
        const buffer = new WriteBuffer(read === undefined ? tx : readAhead.recording(tx, read, reads));
        // In its own caller's trace context, not that of the push whose turn began the drain.
        const { result, keep } = await inContext(context, () => job(buffer, { size: batch.length, waitedMs: waited[i]! }));
        if (read !== undefined) readAhead.learn(storage, space, name!, read);
        if (keep) await buffer.flushTo(tx);
        out.push(result);
      }
      return out;
    },
    { readOnly: false, space, lane: batch.every(({ lane }) => lane === batch[0]!.lane) ? batch[0]!.lane : undefined },
  );
}

function settle(batch: readonly Waiting[], results: readonly unknown[]): void {
  for (const [i, { resolve }] of batch.entries()) resolve(results[i]);
}
