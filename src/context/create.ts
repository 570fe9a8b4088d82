import { checkOptions } from './check-options.js';
import type { SyncContext, SyncOptions } from './context.js';
import { attachState, newState } from './state.js';

/**
 * Makes a server's context from its options, once, at startup: every option is checked here (a
 * wrong one throws a TypeError naming it and what it expected), and the context keeps the state
 * it serves with (rate buckets, drains, poke streams, the housekeeping schedule). Pass the same
 * context to every handler, adapter and backend call; they refuse a plain object.
 *
 * @example
 * const ctx = createContext({ storage: memoryStorage(), mutators });
 * export default { fetch: (request: Request) => handleRequest(request, ctx) };
 */
export function createContext(options: SyncOptions): SyncContext {
  checkOptions(options);
  const ctx = attachState({ ...options, options: Object.freeze({ ...options }) }, newState(options));
  // Options set once: an assignment to one later would not reach the state made from it (and
  // throws in strict mode). The object stays extensible, for an app's own fields.
  for (const key of Object.keys(ctx)) Object.defineProperty(ctx, key, { writable: false, configurable: false });
  return ctx;
}
