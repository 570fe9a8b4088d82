import type { JSONValue } from '../protocol/json.js';
import { checkContext } from '../context/state.js';
import type { ChangeOrigin } from '../sync/version/records.js';
import type { SyncContext } from '../context/context.js';
import { afterChange } from '../context/after-change.js';
import { globalVersion } from '../sync/session/global-version.js';
import { runBatched } from '../sync/batching/group-commit.js';
import { quotaOf } from '../sync/transactions/quota.js';
import { MutatorTimeoutError, mutatorNamed, Watchdog } from '../sync/transactions/app-code.js';
import type { WriteTransaction } from '../sync/transactions/transaction.js';
import { MutationTransaction } from '../sync/transactions/write-transaction.js';

/** Options for {@link transact} and {@link mutate}. */
export interface TransactOptions {
  /** What `tx.userID` says, for mutators that check permissions. Default: undefined (no user). */
  userID?: string | undefined;
  /**
   * How long `fn` may run, in milliseconds, while it holds the space's writes up. Past it, the
   * call rejects with a `MutatorTimeoutError` and nothing is written. Default: `limits.appCodeMs`.
   */
  timeoutMs?: number | undefined;
}

/**
 * Runs `fn` in a transaction of `space` from the app's backend: a webhook, a cron job, a seed
 * script, an admin fix. `tx` is the transaction mutators get (`get`, `has`, `isEmpty`, `scan`,
 * `set`, `del`), with no client: `tx.clientID` is `''` and `tx.mutationID` 0. It queues with the
 * space's pushes and commits with them (group commit), all or nothing: when `fn` throws, the call
 * rejects with that error and nothing is written. A write moves the space's version once, so
 * every client's next pull carries it, and pokes the space's subscribers on every instance the
 * notifier reaches. No client's lastMutationID changes. Resolves with what `fn` returned.
 *
 * `fn` may run more than once when a store retries a transaction, as mutators may: it must have
 * no effects outside `tx` and must not wait on the outside world (see {@link TransactOptions.timeoutMs}).
 *
 * @example
 * await transact(ctx, 'acme', async (tx) => {
 *   await tx.set(`invoice/${id}`, { ...(await tx.get(`invoice/${id}`)), paid: true });
 * });
 */
export function transact<T>(ctx: SyncContext, space: string, fn: (tx: WriteTransaction) => T | Promise<T>, options: TransactOptions = {}): Promise<T> {
  return transactAs(ctx, space, fn, options, undefined);
}

/** {@link transact}, its writes recorded in the change log as made by `origin` (default: `transact`). */
async function transactAs<T>(
  ctx: SyncContext,
  space: string,
  fn: (tx: WriteTransaction) => T | Promise<T>,
  options: TransactOptions,
  origin: ChangeOrigin | undefined,
): Promise<T> {
  checkContext(ctx);
  checkSpace(space);
  const limits = ctx.limits;
  const timed = deadline('transact', options.timeoutMs ?? limits.appCodeMs, 'its writes were discarded');
  const clock = { now: ctx.clock(), touchEveryMs: ctx.touchEveryMs };
  const quota = quotaOf(ctx.quotas, space);
  try {
    const done = await runBatched<{ ok: true; value: T; changed: boolean; touched: readonly string[] | undefined } | { ok: false; error: unknown }>(
      ctx.storage,
      space,
      async (storageTx) => {
        const session = await globalVersion.open(storageTx, space, clock, undefined, ctx.session);
        const tx = new MutationTransaction(session, { clientID: '', mutationID: 0, userID: options.userID }, limits);
        let value: T;
        try {
          value = await timed.run(() => fn(tx));
        } catch (error) {
          tx.discard();
          // The caller's own failure: its writes go, the transaction's other pushes stay.
          return { result: { ok: false, error }, keep: false };
        }
        // The space's quota holds for the app's backend too (importSpace alone is exempt).
        const refused = quota === undefined ? undefined : await tx.overQuota(space, quota);
        if (refused !== undefined) {
          tx.discard();
          return { result: { ok: false, error: refused }, keep: false };
        }
        session.recordAs(origin ?? { kind: 'backend', call: 'transact', userID: options.userID ?? null });
        await tx.flush();
        return { result: { ok: true, value, changed: await session.commit(), touched: session.touched() }, keep: true };
      },
      // Its writes are the space's data alone: a webhook's delivery never holds it up.
      { lane: 'data' },
    );
    if (!done.ok) throw done.error;
    if (done.changed) afterChange(ctx, space, { operation: 'transact', space }, done.touched && { keys: done.touched, groups: [] });
    return done.value;
  } finally {
    timed.stop();
  }
}

/**
 * Runs the registered mutator `name` with `args` from the app's backend, as {@link transact}
 * runs a function: a webhook route reuses the mutators clients run. Rejects as a push would
 * record the mutation's failure (an `UnknownMutatorError`, an `InvalidArgsError` for args its
 * schema refuses, or whatever the mutator threw), and then nothing is written.
 *
 * @example
 * await mutate(ctx, 'acme', 'markPaid', { invoice: id });
 */
export async function mutate(ctx: SyncContext, space: string, name: string, args: JSONValue | undefined, options: TransactOptions = {}): Promise<void> {
  checkContext(ctx);
  const mutator = mutatorNamed(ctx.mutators, name);
  await transactAs(ctx, space, async (tx) => void (await mutator(tx, args)), options, {
    kind: 'backend',
    call: 'mutate',
    name,
    userID: options.userID ?? null,
  });
}

/** A space is any string, as `SyncOptions.space` returns it; a typo like `undefined` is not. */
export function checkSpace(space: unknown): asserts space is string {
  if (typeof space !== 'string') throw new TypeError(`A space must be a string, got ${space === null ? 'null' : typeof space}`);
}

/**
 * A deadline for a backend call's function: `run(fn)` resolves with what `fn` returned, or rejects
 * with a `MutatorTimeoutError` that names the call once `fn` has run `ms`; `stop` ends its timer.
 */
export function deadline(call: string, ms: number, outcome: string): { run<T>(fn: () => T | Promise<T>): Promise<T>; stop(): void } {
  const watchdog = new Watchdog(ms, (name) => new MutatorTimeoutError(name, ms, `The ${call} function ran longer than ${ms} ms (timeoutMs); ${outcome}`));
  return {
    async run(fn) {
      let value!: Awaited<ReturnType<typeof fn>>;
      await watchdog.run(call, async () => {
        value = await fn();
      });
      return value;
    },
    stop: () => watchdog.stop(),
  };
}
