import { defaultNotifier, type Notifier } from '../poke/notifier.js';
import { PokeHub } from '../poke/hub.js';
import { type Limits, resolveLimits } from '../sync/transactions/limits.js';
import type { Retention, SessionClock, SessionOptions } from '../sync/version/strategy.js';
import type { HistoryOptions, RetentionOptions, SyncContext, SyncOptions } from './context.js';
import { CHECKPOINT_EVERY } from '../sync/history/checkpoints.js';
import { type Rates, resolveRates } from './rates.js';
import { LiveStats } from '../telemetry/live.js';
import type { Reply } from '../base/reply.js';

/**
 * What a context holds besides its options: their defaults resolved, checked once, and the
 * state it keeps while it serves. The one place a context's state lives, made with the context
 * by createContext and gone with it. Store-wide state is kept by the store's own modules instead, keyed by
 * the store: two contexts over one store share its commit queue (sync/batching/group-commit.ts), its
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
  /** The key poke tokens are signed with, imported on first use (see server/poke-token.ts). */
  pokeKey: Promise<CryptoKey> | undefined;
  /** Told of each change committed through this context (the webhook runner, to deliver at once). */
  readonly changeListeners: Set<(space: string) => void>;
  /** With `changes`: the store's feed record set on, after the context's first commit (see feed-record.ts). */
  feedRecorded: Promise<void> | undefined;
  /** With an inspector: the live numbers it draws (pushes, pulls, pokes a second…), counted in this process. */
  readonly live: LiveStats | undefined;
  /** With an inspector: the door `handleRequest` sends `…/_inspect/…` to, set by the `createContext` of the package's entry (src/inspector/). */
  inspectorDoor: InspectorDoor | undefined;
}

/** Serves the inspector's requests: `base` is the path up to and including `/_inspect`. */
export type InspectorDoor = (request: Request, ctx: SyncContext, base: string) => Promise<Reply>;

/** Where a context keeps its state: not enumerable, so a spread or a JSON of the context carries none. */
const STATE = Symbol('viewsync context state');

/** The state of a context `options` is made into (options already checked: see createContext). */
export function newState(options: SyncOptions): ContextState {
  return { limits: resolveLimits(options.limits), retention: resolveRetention(options.retention, options.history), rates: resolveRates(options.rates), drains: 0, hub: undefined, housekeeping: new Map(), pokeKey: undefined, changeListeners: new Set(), feedRecorded: undefined, live: options.inspector === undefined ? undefined : new LiveStats(), inspectorDoor: undefined };
}

/** Makes `target` a context holding `state`. */
export function attachState<T extends object>(target: T, state: ContextState): T {
  return Object.defineProperty(target, STATE, { value: state, enumerable: false });
}

/** The state of `ctx`; throws, saying what to do, for anything `createContext` did not make. */
export function stateOf(ctx: SyncContext): ContextState {
  const state = (ctx as { [STATE]?: ContextState } | null | undefined)?.[STATE];
  if (state === undefined) throw new TypeError(NOT_A_CONTEXT);
  return state;
}

/** Throws unless `ctx` was made by `createContext`: the first thing every public call does, so a plain object fails at once, saying what to do. */
export function checkContext(ctx: SyncContext): void {
  stateOf(ctx);
}

const NOT_A_CONTEXT =
  'viewsync: this is not a context made by createContext(). Make it once, at startup (const ctx = createContext({ storage, mutators, ... })), ' +
  'and pass that same ctx to every handler, adapter and backend call: its rate buckets, drains, poke streams and housekeeping schedule live in it, ' +
  'and would be lost with an object made per request. (A spread of a context is a plain object too: createContext({ ...ctx.options, ... }) makes a variant.)';

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

/** How `ctx`'s writes are made: which indexes and logs they keep, and the store's bound on keys. */
export function sessionOptionsOf(ctx: SyncContext): SessionOptions {
  return { prefixIndex: ctx.view !== undefined, maxKeyBytes: ctx.storage.maxKeyBytes, indexes: ctx.indexes, feed: ctx.changes !== undefined || ctx.history !== undefined };
}

/** The poke streams of `ctx`, made on first use. */
export function hubOf(ctx: SyncContext): PokeHub {
  const state = stateOf(ctx);
  return (state.hub ??= new PokeHub(notifierOf(ctx), ctx.pokes || {}, state.live));
}

/** The poke hub of `ctx` if it has one yet (a stream opened), without making it. */
export function openHubOf(ctx: SyncContext): PokeHub | undefined {
  return ctx.pokes === false ? undefined : stateOf(ctx).hub;
}

/** Where `ctx` hears of and announces changes: its own notifier, or the store's in-process one. */
export function notifierOf(ctx: SyncContext): Notifier {
  // biome-ignore lint/complexity/useOptionalChain: `pokes` may be `false`, which `?.` does not read past.
  return (ctx.pokes && ctx.pokes.notifier) || defaultNotifier(ctx.storage);
}

/** How long idle client groups and tombstones are kept unless `retention` says otherwise (and the CLI's gc, unless told). */
export const DEFAULT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

function resolveRetention(options: RetentionOptions | undefined, history: HistoryOptions | undefined): Retention {
  return {
    clientGroupsMs: options?.clientGroupsMs ?? DEFAULT_RETENTION_MS,
    tombstonesMs: options?.tombstonesMs ?? DEFAULT_RETENTION_MS,
    changesMs: options?.changesMs ?? DEFAULT_RETENTION_MS,
    historyMs: options?.historyMs ?? options?.changesMs ?? DEFAULT_RETENTION_MS,
    // Checkpoints are written where a context keeps history; the default interval is the checkpoints' own.
    checkpointEvery: history === undefined ? undefined : (history.checkpointEvery ?? CHECKPOINT_EVERY),
  };
}

