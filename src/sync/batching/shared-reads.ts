import type { RangeRead, RangeRow, ScanOptions, Storage, StorageTransaction, StoredValue } from '../../storage/types.js';
import { getMany, scanText } from '../../storage/write-buffer.js';
import { PrefetchedRead, type ReadPlan, rangesOf, scanKey } from './prefetched-read.js';
import { type Context, activeContext, inContext } from '../../telemetry/telemetry.js';
import { SharingRead } from './shared-derivations.js';
import { SpaceQueues } from './space-queues.js';

/**
 * Shared reads, the read-side twin of group commit (group-commit.ts): `job` runs in a read-only
 * transaction of `space` together with the jobs that arrived for that space while its previous
 * shared transaction ran. A poke makes every subscriber of a space pull at once, with the same
 * cookie; together they then cost one transaction, one read of the space's meta record and
 * their groups' records (one `getMany`), and one read of each distinct thing they ask for
 * (the changes since a version, a full patch), instead of all of it once per pull.
 *
 * The jobs run side by side over one {@link SharedRead} of the transaction, so all of them see
 * one snapshot, the same one each would have seen had it started its own transaction then: a
 * pull that waited only sees changes committed before it ran, never fewer than when it arrived.
 * A job's failure is its own: when a job fails in a shared transaction, it runs again alone
 * (a failed statement aborts the whole transaction on PostgreSQL, so the others' failures there
 * may be that one's), and only what fails alone is reported.
 */
export function readBatched<T>(storage: Storage, space: string, job: (tx: StorageTransaction) => Promise<T>, plan?: ReadPlan): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    queues.add(storage, space, { job: job as ReadJob, plan, context: activeContext(), resolve: resolve as (value: unknown) => void, reject });
  });
}

/**
 * `job` as {@link readBatched} runs it, but alone: on the reads of its `plan` first, when it has
 * one, else (or when it needs more) in a read-only transaction of its own.
 */
export function readAlone<T>(storage: Storage, space: string, job: (tx: StorageTransaction) => Promise<T>, plan?: ReadPlan): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const waiting: Waiting = { job: job as ReadJob, plan, context: activeContext(), resolve: resolve as (value: unknown) => void, reject };
    void (async () => {
      const rest = plan === undefined ? [waiting] : await runPlanned(storage, space, [waiting]);
      if (rest.length > 0) await runInTransaction(storage, space, rest);
    })();
  });
}

type ReadJob = (tx: StorageTransaction) => Promise<unknown>;

interface Waiting {
  job: ReadJob;
  /** What the job will read, when it can tell ahead: then it may run on those reads alone. */
  plan: ReadPlan | undefined;
  /** The trace context the job arrived in, which it runs in. */
  context: Context;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** Runs a batch of reads: the planned ones on their reads alone, the rest (and those that needed more) in one transaction. */
function runBatch(storage: Storage, space: string, batch: readonly Waiting[]): Promise<void> {
  // None planned (a store without readMany, or pulls that cannot tell their reads): straight to
  // the transaction, without the sorting below (two filters, a copy and one more await a pull).
  if (batch.every((waiting) => waiting.plan === undefined)) return runInTransaction(storage, space, batch);
  return runPlannedFirst(storage, space, batch);
}

async function runPlannedFirst(storage: Storage, space: string, batch: readonly Waiting[]): Promise<void> {
  const unanswered = await runPlanned(
    storage,
    space,
    batch.filter((waiting) => waiting.plan !== undefined),
  );
  const rest = [...batch.filter((waiting) => waiting.plan === undefined), ...unanswered];
  if (rest.length > 0) await runInTransaction(storage, space, rest);
}

/** The reads waiting per store and space, at most 256 to a transaction: a bound on how long one shared read (and its snapshot) lasts. */
const queues = new SpaceQueues<Waiting>(runBatch, 256);

/**
 * Reads what `batch`'s jobs said they would (their plans, each read once) in one snapshot with
 * the store's `readMany` (one statement on a database, no transaction), and runs the jobs on
 * those reads. Resolves with the jobs that needed more, or failed, for a transaction.
 */
async function runPlanned(storage: Storage, space: string, batch: readonly Waiting[]): Promise<Waiting[]> {
  const plan = mergePlans(batch.map((waiting) => waiting.plan!));
  let results: RangeRow[][];
  try {
    results = await storage.readMany!(rangesOf(plan), { space });
  } catch {
    // The store failed the read: the transaction says so, or succeeds where this failed.
    return [...batch];
  }
  const reads = new PrefetchedRead(plan, results);
  const outcomes = await Promise.allSettled(batch.map(({ job, context }) => inContext(context, () => job(reads))));
  const unanswered: Waiting[] = [];
  outcomes.forEach((outcome, i) => {
    if (outcome.status === 'fulfilled') batch[i]!.resolve(outcome.value);
    else unanswered.push(batch[i]!);
  });
  return unanswered;
}

/** The plans' reads, each once. */
function mergePlans(plans: readonly ReadPlan[]): ReadPlan {
  const gets = new Set<string>();
  const scans = new Map<string, RangeRead>();
  for (const plan of plans) {
    for (const key of plan.gets) gets.add(key);
    for (const scan of plan.scans) scans.set(scanKey(scan) + JSON.stringify(scan.join ?? null), scan);
  }
  return { gets: [...gets], scans: [...scans.values()] };
}

/** Runs `batch`'s jobs in a shared read-only transaction; a job that fails there runs again alone. */
async function runInTransaction(storage: Storage, space: string, batch: readonly Waiting[]): Promise<void> {
  try {
    const outcomes = await read(storage, space, batch);
    for (const [i, waiting] of batch.entries()) {
      const outcome = outcomes[i]!;
      if (outcome.status === 'fulfilled') waiting.resolve(outcome.value);
      else if (batch.length === 1) waiting.reject(outcome.reason);
      else
        await read(storage, space, [waiting]).then(
          ([alone]) => (alone!.status === 'fulfilled' ? waiting.resolve(alone!.value) : waiting.reject(alone!.reason)),
          waiting.reject,
        );
    }
  } catch (error) {
    // The transaction itself failed (the store is down): each job would have failed alone too.
    for (const waiting of batch) waiting.reject(error);
  }
}

/** Runs `batch`'s jobs side by side in one read-only transaction of `space`: how each ended. */
function read(storage: Storage, space: string, batch: readonly Waiting[]): Promise<Array<PromiseSettledResult<unknown>>> {
  return storage.transaction(
    async (tx) => {
      // A job alone runs on the transaction itself, as it would without sharing.
      if (batch.length === 1) return [await inContext(batch[0]!.context, () => batch[0]!.job(tx)).then(fulfilled, rejected)];
      // A store may run this again (a retry): each attempt reads afresh.
      const shared = new SharedRead(tx);
      return Promise.allSettled(batch.map(({ job, context }) => inContext(context, () => job(shared))));
    },
    { readOnly: true, space },
  );
}

const fulfilled = (value: unknown): PromiseSettledResult<unknown> => ({ status: 'fulfilled', value });
const rejected = (reason: unknown): PromiseSettledResult<unknown> => ({ status: 'rejected', reason });

/**
 * A read-only transaction seen by several jobs at once. What they read is read once: gets and
 * `getMany`s asked for in the same turn of the event loop go out as one `getMany`, a scan asked
 * for twice is read once, and {@link SharedRead.once} computes anything derived from the
 * snapshot (a patch) once for everyone that names it alike. Everything it hands out is shared,
 * so callers never change what they get (as with any store, see `Storage`'s values).
 */
export class SharedRead extends SharingRead implements StorageTransaction {
  readonly #tx: StorageTransaction;
  readonly #values = new Map<string, Promise<StoredValue | undefined>>();
  readonly #scans = new Map<string, Promise<unknown>>();
  /** Keys asked for this turn, read together when the turn ends. */
  #pending: Map<string, { resolve: (value: StoredValue | undefined) => void; reject: (error: unknown) => void }> | undefined;

  constructor(tx: StorageTransaction) {
    super();
    this.#tx = tx;
  }

  get(key: string): Promise<StoredValue | undefined> {
    let value = this.#values.get(key);
    if (value === undefined) {
      value = new Promise((resolve, reject) => {
        if (this.#pending === undefined) {
          this.#pending = new Map();
          queueMicrotask(() => this.#flush());
        }
        this.#pending.set(key, { resolve, reject });
      });
      this.#values.set(key, value);
    }
    return value;
  }

  getMany(keys: readonly string[]): Promise<Array<StoredValue | undefined>> {
    return Promise.all(keys.map((key) => this.get(key)));
  }

  scan(options: ScanOptions): Promise<ReadonlyArray<readonly [string, StoredValue]>> {
    return this.#scan('scan', options, () => this.#tx.scan(options));
  }

  scanText(options: ScanOptions): Promise<ReadonlyArray<readonly [string, string]>> {
    return this.#scan('text', options, () => scanText(this.#tx, options));
  }

  put(): Promise<void> {
    return Promise.reject(new Error('Cannot write in a read-only transaction'));
  }

  del(): Promise<void> {
    return Promise.reject(new Error('Cannot write in a read-only transaction'));
  }

  #scan<T>(kind: string, options: ScanOptions, run: () => Promise<T>): Promise<T> {
    const key = kind + scanKey(options);
    let result = this.#scans.get(key);
    if (result === undefined) this.#scans.set(key, (result = run()));
    return result as Promise<T>;
  }

  #flush(): void {
    const pending = this.#pending!;
    this.#pending = undefined;
    const keys = [...pending.keys()];
    getMany(this.#tx, keys).then(
      (values) => keys.forEach((key, i) => void pending.get(key)!.resolve(values[i])),
      (error: unknown) => pending.forEach(({ reject }) => void reject(error)),
    );
  }
}
