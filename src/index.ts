export { handlePull } from './server/handle-pull.js';
export { handlePush } from './server/handle-push.js';
export { handleRequest } from './server/handle-request.js';
export { handlePoke } from './server/handle-poke.js';
export { pokeToken } from './server/poke-token.js';
export { drain, type DrainOptions } from './context/drain.js';
export { checkHealth, type Health, type HealthOptions } from './server/health.js';
export { collectGarbage, type CollectOptions, type Collected } from './context/collect-garbage.js';
export { transact, mutate, type TransactOptions } from './backend/transact.js';
export { read, type ReadOptions } from './backend/read.js';
export { emit } from './base/emit.js';
export { readChanges, followChanges, readAllChanges, type ReadChangesOptions, type FollowChangesOptions, type ReadAllChangesOptions } from './backend/changes.js';
export type { StoreFeedPage } from './sync/feed/store-feed.js';
export { handleChanges } from './server/handle-changes.js';
export { handleHistory } from './server/handle-history.js';
export { replayWebhook, enableWebhook, type DeliveryRound, type EnableWebhookOptions, type WebhookDelivery } from './backend/webhooks.js';
export type { WebhookDeliveries } from './backend/webhook-together.js';
export { deliverWebhooks } from './backend/webhook-round.js';
export type { Gap } from './sync/feed/deliveries.js';
export { changeFeedStatus, turnOffChangeFeed, type FeedStatus } from './backend/feed-switch.js';
export { startWebhooks, type WebhookRunner, type WebhookRunnerOptions } from './backend/webhook-runner.js';
export { verifyWebhook, WebhookSignatureError, type VerifyWebhookOptions } from './base/webhook-signature.js';
export { ChangesGoneError, ChangeCursorError, type FeedChange, type FeedPage } from './sync/feed/feed-pages.js';
export type { Erased } from './sync/feed/change-log.js';
export type { ChangeOrigin, RevertCause } from './sync/version/records.js';
export { at, readHistory, restoreSpace, revertChanges, eraseData, HistoryGoneError, ERASED_TOPIC, type AtOptions, type AsOf, type ReadHistoryOptions, type HistoryPage, type RestoreOptions, type RestoreResult, type RevertOptions, type RevertResult, type EraseResult, type EraseTarget, type PlannedChange, type RevertConflict, type ConflictPolicy } from './backend/history.js';
export type { LoggedChange } from './sync/history/log-reads.js';
export { exportSpace, type ExportOptions, type ExportProgress } from './backend/export.js';
export { importSpace, type ImportOptions, type ImportProgress, type ImportResult, type SkippedClient } from './backend/import.js';
export { DumpError, type DumpSource } from './backend/lines.js';
export { defineMigration, runMigration, migrationStatus, type Migration, type MigrationOptions, type MigrationProgress, type MigrationResult, type SpaceMigration } from './backend/migrate.js';
export { inspect, type SpaceSummary, type SpaceDetail, type GroupSummary, type StagingSummary, type ChangeLogSummary, type WebhookSummary } from './backend/inspect.js';
export { storeNotifier, type StoreNotifier, type StoreNotifierOptions } from './poke/store-notifier.js';
export { type ChangeDetail, localNotifier, type Notifier, type Unsubscribe } from './poke/notifier.js';
export type { PokeOptions } from './poke/options.js';
export type { SyncContext, SyncOptions, InspectorOptions, InspectorAction, ErrorInfo, CorsOptions, RetentionOptions, ChangeFeedOptions, HistoryOptions, WebhookOptions, FirstSyncOptions } from './context/context.js';
export { createContext } from './inspector/attach.js';
export { DEFAULT_LIMITS, MAX_VALUE_DEPTH, type Limits } from './sync/transactions/limits.js';
export { HTTPError, TemporaryError, QuotaExceededError, type HTTPErrorOptions, type Issue } from './base/errors.js';
export type { SpaceQuota, Quotas } from './sync/transactions/quota.js';
export type { RateOptions } from './context/rates.js';
export { defineMutator, InvalidArgsError, type Mutator, type Mutators, type StandardSchemaV1 } from './sync/transactions/mutator.js';
export { UnknownMutatorError, MutatorTimeoutError } from './sync/transactions/app-code.js';
export type { View, ViewRequest } from './sync/view.js';
export type { FirstSyncOrder, FirstSyncOrderRequest } from './sync/first-sync-order.js';
export type { SchemaOptions, OlderSchema, MutationUpgrade, ReadDowngrade } from './sync/schema/schema-options.js';
export { MutationUpgradeError } from './sync/schema/upgrade.js';
export { DowngradeError } from './sync/schema/downgrade.js';
export { REJECTED_TOPIC, type KeptRejection } from './sync/schema/rejected.js';
export type { RejectedMutation } from './sync/version/records.js';
export type { IndexDefinition, IndexDefinitions } from './sync/version/indexes.js';
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
export { memoryStorage } from './storage/memory.js';
export { routedStorage, type RoutedStorage, type RoutedStorageOptions } from './route/routed-storage.js';
export type { Placement } from './route/placement.js';
export { moveSpace, type MoveOptions, type MoveProgress, type MoveResult } from './backend/move.js';
export { RouteError } from './route/route-record.js';
export { StagingLostError } from './sync/dumps/import-batch.js';
export type { Storage } from './storage/types.js';
export type { JSONValue } from './protocol/json.js';
