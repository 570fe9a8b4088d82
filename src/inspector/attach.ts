import { createContext as createBareContext } from '../context/create.js';
import type { SyncContext, SyncOptions } from '../context/context.js';
import { inspectorDoor } from './door.js';

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
  const ctx = createBareContext(options);
  // The inspector is a door above the server's (it reads through the backend): the context
  // carries it, so handleRequest serves it without importing it.
  if (options.inspector !== undefined) ctx.state.inspectorDoor = inspectorDoor(options.inspector);
  return ctx;
}
