import type { ContextState, SyncContext } from './context.js';
import { LiveStats } from '../telemetry/live.js';
import { resolveRates } from './rates.js';
import type { CheckedOptions } from './options-schema.js';

export { DEFAULT_RETENTION_MS } from './options-schema.js';

/** Marks a context made by createContext: not enumerable, so a spread or a JSON of the context carries none. */
const MADE = Symbol('viewsync context');

/** The state a context of `options` starts with (options already checked: see createContext). */
export function newState(options: CheckedOptions): ContextState {
  return {
    rates: resolveRates(options.rates),
    drains: 0,
    housekeeping: new Map(),
    pokeKey: undefined,
    changeListeners: new Set(),
    feedRecorded: undefined,
    live: options.inspector === undefined ? undefined : new LiveStats(),
    inspectorDoor: undefined,
  };
}

/** Makes `target` a context holding `state`, as a field a spread leaves behind. */
export function attachState<T extends object>(target: T, state: ContextState): T & { readonly state: ContextState } {
  Object.defineProperty(target, MADE, { value: true, enumerable: false });
  return Object.defineProperty(target, 'state', { value: state, enumerable: false, writable: false, configurable: false }) as T & {
    readonly state: ContextState;
  };
}

/** Throws unless `ctx` was made by `createContext`: the first thing every public call does, so a plain object fails at once, saying what to do. */
export function checkContext(ctx: SyncContext): void {
  if ((ctx as { [MADE]?: true } | null | undefined)?.[MADE] !== true) throw new TypeError(NOT_A_CONTEXT);
}

const NOT_A_CONTEXT =
  'viewsync: this is not a context made by createContext(). Make it once, at startup (const ctx = createContext({ storage, mutators, ... })), ' +
  'and pass that same ctx to every handler, adapter and backend call: its rate buckets, drains, poke streams and housekeeping schedule live in it, ' +
  'and would be lost with an object made per request. (A spread of a context is a plain object too: createContext({ ...ctx.options, ... }) makes a variant.)';
