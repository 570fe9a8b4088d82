import type * as v from 'valibot';
import { defaultNotifier } from '../poke/notifier.js';
import { PokeHub } from '../poke/hub.js';
import type { Retention } from '../sync/version/strategy.js';
import type { SyncContext, SyncOptions } from './context.js';
import { type CheckedOptions, DEFAULT_RETENTION_MS, parseOptions, type SyncOptionsSchema } from './options-schema.js';
import { attachState, newState } from './state.js';

/**
 * Makes a server's context from its options, once, at startup: every option is checked here (a
 * wrong one throws a TypeError naming it and what it expected) and resolved into the context's
 * plain fields, defaults filled in; the context also keeps the state it serves with (rate
 * buckets, drains, poke streams, the housekeeping schedule). Pass the same context to every
 * handler, adapter and backend call; they refuse a plain object.
 *
 * @example
 * const ctx = createContext({ storage: memoryStorage(), mutators });
 * export default { fetch: (request: Request) => handleRequest(request, ctx) };
 */
export function createContext(options: SyncOptions): SyncContext {
  const o = parseOptions(options);
  const state = newState(o);
  const retention = resolveRetention(o);
  const notifier = (o.pokes !== false && o.pokes.notifier) || defaultNotifier(o.storage);
  const ctx = attachState(
    {
      options: Object.freeze({ ...options }),
      storage: o.storage,
      mutators: o.mutators,
      authenticate: o.authenticate,
      space: o.space,
      view: o.view,
      indexes: o.indexes,
      schemaVersion: o.schemaVersion,
      schema: o.schema,
      limits: Object.freeze(o.limits),
      rates: o.rates,
      quotas: o.quotas,
      onError: o.onError,
      transactionPerMutation: o.transactionPerMutation,
      shareReads: o.shareReads,
      pokes: o.pokes,
      retention,
      clock: o.clock,
      // A tenth of the retention: an idle group expires between 0.9 and 1 times it after its last sign.
      touchEveryMs: (retention.clientGroupsMs === false ? DEFAULT_RETENTION_MS : retention.clientGroupsMs) / 10,
      cors: o.cors,
      changes: o.changes,
      history: o.history,
      firstSync: o.firstSync,
      inspector: o.inspector,
      session: Object.freeze({
        prefixIndex: o.view !== undefined,
        maxKeyBytes: o.storage.maxKeyBytes,
        indexes: o.indexes,
        feed: o.changes !== undefined || o.history !== undefined,
      }),
      notifier,
      hub: o.pokes === false ? undefined : new PokeHub(notifier, o.pokes, state.live),
    } satisfies Omit<SyncContext, 'state'>,
    state,
  );
  // Set once: an assignment to a field later would not reach what was made from it (and throws
  // in strict mode). The object stays extensible, for an app's own fields.
  for (const key of Object.keys(ctx)) Object.defineProperty(ctx, key, { writable: false, configurable: false });
  return ctx;
}

/** How long each kind of record is kept: history as long as the change log unless told, checkpoints only where history is kept. */
function resolveRetention({ retention, history }: CheckedOptions): Retention {
  return Object.freeze({ ...retention, historyMs: retention.historyMs ?? retention.changesMs, checkpointEvery: history?.checkpointEvery });
}

// The documented interfaces (context.ts, each field with its JSDoc) and the schema take the same
// options: a field added to one and not the other, or typed apart, fails the typecheck here.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameOptions: Same<v.InferInput<typeof SyncOptionsSchema>, SyncOptions> = true;
void sameOptions;
