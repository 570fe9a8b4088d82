/**
 * `viewsync/ops`: what operators run: housekeeping, health and shutdown, limits and tenants'
 * quotas, what a store holds (inspect, export, import), data migrations, instances and stores
 * beside each other (notifiers through the store, routing, moves), and the inspector's options.
 */
// Housekeeping, readiness and shutdown.
export { collectGarbage, type CollectOptions, type Collected } from './context/collect-garbage.js';
export type { RetentionOptions, InspectorOptions, InspectorAction } from './context/context.js';
export { checkHealth, type Health, type HealthOptions } from './server/health.js';
export { drain, type DrainOptions } from './context/drain.js';
// Limits, and tenants kept apart.
export { DEFAULT_LIMITS, MAX_VALUE_DEPTH, type Limits } from './sync/transactions/limits.js';
export { QuotaExceededError } from './base/errors.js';
export type { SpaceQuota, Quotas } from './sync/transactions/quota.js';
export type { RateOptions } from './context/rates.js';
// What a store holds, dumped and loaded.
export {
  inspect,
  type SpaceSummary,
  type SpaceDetail,
  type GroupSummary,
  type StagingSummary,
  type ChangeLogSummary,
  type WebhookSummary,
} from './backend/inspect.js';
export { exportSpace, type ExportOptions, type ExportProgress } from './backend/export.js';
export { importSpace, type ImportOptions, type ImportProgress, type ImportResult, type SkippedClient } from './backend/import.js';
export { DumpError, type DumpSource } from './backend/lines.js';
export { StagingLostError } from './sync/dumps/import-batch.js';
// Data migrations.
export {
  defineMigration,
  runMigration,
  migrationStatus,
  type Migration,
  type MigrationOptions,
  type MigrationProgress,
  type MigrationResult,
  type SpaceMigration,
} from './backend/migrate.js';
// Several instances, and several stores.
export { storeNotifier, type StoreNotifier, type StoreNotifierOptions } from './poke/store-notifier.js';
export { routedStorage, type RoutedStorage, type RoutedStorageOptions } from './route/routed-storage.js';
export type { Placement } from './route/placement.js';
export { moveSpace, type MoveOptions, type MoveProgress, type MoveResult } from './backend/move.js';
export { RouteError } from './route/route-record.js';
