import { defaultNotifier, type Notifier } from '../poke/notifier.js';
import { PokeHub } from '../poke/hub.js';
import { refuseRenamed } from '../base/renamed.js';
import { type Limits, resolveLimits } from '../sync/limits.js';
import type { Retention, SessionClock } from '../sync/strategy.js';
import type { RetentionOptions, SyncContext } from './context.js';
import { type Rates, resolveRates } from './rates.js';

/**
 * What a context becomes once resolved: its options with their defaults, checked once, and the
 * state it keeps while it serves. The one place a context's state lives, made on first use and
 * gone with the context. Store-wide state is kept by the store's own modules instead, keyed by
 * the store: two contexts over one store share its commit queue (sync/group-commit.ts), its
 * in-process notifier (poke/notifier.ts) and its view cache (sync/view.ts).
 */
export interface ContextState {
  readonly limits: Limits;
  readonly retention: Retention;
  /** The buckets of its rates: in this process, so each instance counts only what it serves. */
  readonly rates: Rates | undefined;
  /** Drains in force: several servers may share one context and stop one by one. */
  drains: number;
  /** The poke streams, made on first use (a context that serves no pokes never has one). */
  hub: PokeHub | undefined;
  /** When housekeeping last ran after a push, by space (see collect-garbage.ts). */
  readonly housekeeping: Map<string, number>;
}

/** The state of `ctx`, resolved on first use; a bad option throws here, naming it. */
export function stateOf(ctx: SyncContext): ContextState {
  let state = states.get(ctx);
  if (state === undefined) {
    state = { limits: resolveLimits(ctx.limits), retention: resolveRetention(ctx.retention), rates: resolveRates(ctx.rates), drains: 0, hub: undefined, housekeeping: new Map() };
    states.set(ctx, state);
  }
  return state;
}

/** The limits of `ctx`, defaults filled in. */
export function limitsOf(ctx: SyncContext): Limits {
  return stateOf(ctx).limits;
}

/** The time a request works at, and how often a group's activity is written down. */
export function clockOf(ctx: SyncContext): SessionClock {
  const { clientGroupsMs } = stateOf(ctx).retention;
  // A tenth of the retention: an idle group expires between 0.9 and 1 times it after its last sign.
  return { now: (ctx.clock ?? Date.now)(), touchEveryMs: (clientGroupsMs === false ? DEFAULT_RETENTION_MS : clientGroupsMs) / 10 };
}

/** The poke streams of `ctx`, made on first use. */
export function hubOf(ctx: SyncContext): PokeHub {
  const state = stateOf(ctx);
  return (state.hub ??= new PokeHub(notifierOf(ctx), ctx.pokes || {}));
}

/** Where `ctx` hears of and announces changes: its own notifier, or the store's in-process one. */
export function notifierOf(ctx: SyncContext): Notifier {
  return (ctx.pokes && ctx.pokes.notifier) || defaultNotifier(ctx.storage);
}

const DEFAULT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

function resolveRetention(options: RetentionOptions | undefined): Retention {
  refuseRenamed(options, 'retention', { clientGroups: 'clientGroupsMs', tombstones: 'tombstonesMs' });
  return { clientGroupsMs: options?.clientGroupsMs ?? DEFAULT_RETENTION_MS, tombstonesMs: options?.tombstonesMs ?? DEFAULT_RETENTION_MS };
}

const states = new WeakMap<SyncContext, ContextState>();
