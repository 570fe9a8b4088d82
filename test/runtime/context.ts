/** The runtime suite's app as a context, for the tests that run in Node on the sources (app.ts imports nothing at run time, for the other runtimes). */
import { createContext, type Storage, type SyncContext, type SyncOptions } from '../../src/index.js';
import { runtimeOptions } from './app.js';

/** The runtime suite's app over `storage`, as a context of the sources' own. */
export function runtimeContext(storage: Storage, options: Partial<SyncOptions> = {}): SyncContext {
  return createContext(runtimeOptions(storage, options));
}
