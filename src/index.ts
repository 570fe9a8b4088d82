/**
 * `viewsync`: what an app imports to serve sync: the context and its options, the endpoints,
 * mutators and their transactions, the errors a mutator or `authenticate` throws, the in-memory
 * store and the in-process notifier. What the app's backend calls is in `viewsync/backend`; what
 * operators run is in `viewsync/ops`.
 */
// The context, its options, and the endpoints that serve it.
export { createContext } from './inspector/attach.js';
export type { SyncContext, SyncOptions, ErrorInfo, CorsOptions } from './context/context.js';
export { handleRequest } from './server/handle-request.js';
export { handlePull } from './server/handle-pull.js';
export { handlePush } from './server/handle-push.js';
export { handlePoke } from './server/handle-poke.js';
export { pokeToken } from './server/poke-token.js';
export type { PokeOptions } from './poke/options.js';
export { localNotifier, type Notifier, type Unsubscribe, type ChangeDetail } from './poke/notifier.js';
// Mutators, their transactions, and the errors they throw and meet.
export { defineMutator, InvalidArgsError, type Mutator, type Mutators, type StandardSchemaV1 } from './sync/transactions/mutator.js';
export type {
  ReadTransaction,
  WriteTransaction,
  ScanOptions,
  ScanIndexOptions,
  IndexKey,
  DeepReadonly,
  ScanResult,
  ScanIterator,
} from './sync/transactions/transaction.js';
// Also in `viewsync/client`, for mutators shared with the browser, which must not import the server.
export { emit } from './base/emit.js';
export { HTTPError, TemporaryError, type HTTPErrorOptions, type Issue } from './base/errors.js';
export { UnknownMutatorError, MutatorTimeoutError } from './sync/transactions/app-code.js';
// What each user sees, and what a first sync sends first.
export type { View, ViewRequest } from './sync/view.js';
export type { IndexDefinition, IndexDefinitions } from './sync/version/indexes.js';
export type { FirstSyncOptions } from './context/context.js';
export type { FirstSyncOrder, FirstSyncOrderRequest } from './sync/first-sync-order.js';
// Older clients' schema versions served beside today's.
export type { SchemaOptions, OlderSchema, MutationUpgrade, ReadDowngrade } from './sync/schema/schema-options.js';
export { MutationUpgradeError } from './sync/schema/upgrade.js';
export { DowngradeError } from './sync/schema/downgrade.js';
// The store: the embedded default, and the type of `storage` (the seam itself is `viewsync/store`'s).
export { memoryStorage } from './storage/memory.js';
export type { Storage } from './storage/types.js';
// Also in `viewsync/protocol`: the values a mutator reads and writes are the wire's JSON.
export type { JSONValue } from './protocol/json.js';
