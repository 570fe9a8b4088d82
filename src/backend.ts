/**
 * `viewsync/backend`: what the app's backend code calls beside the endpoints: its own reads and
 * writes of a space, the change feed and its webhooks, and a space's history (reads, restores,
 * reverts and erasure). The app's context comes from `viewsync`; operators' tasks are `viewsync/ops`'.
 */
// Reads and writes from the backend, with a mutator's transaction.
export { transact, mutate, type TransactOptions } from './backend/transact.js';
export { read, type ReadOptions } from './backend/read.js';
// The change feed: its options, its pages, its errors, and its HTTP door.
export type { ChangeFeedOptions } from './context/context.js';
export {
  readChanges,
  followChanges,
  readAllChanges,
  type ReadChangesOptions,
  type FollowChangesOptions,
  type ReadAllChangesOptions,
} from './backend/changes.js';
export type { StoreFeedPage } from './sync/feed/store-feed.js';
export { ChangesGoneError, ChangeCursorError, type FeedChange, type FeedPage } from './sync/feed/feed-pages.js';
export type { Erased } from './sync/feed/change-log.js';
export type { ChangeOrigin, RevertCause, RejectedMutation } from './sync/version/records.js';
export { REJECTED_TOPIC, type KeptRejection } from './sync/schema/rejected.js';
export { handleChanges } from './server/handle-changes.js';
// Webhooks: delivering the feed, and the receiver's check.
export type { WebhookOptions } from './context/context.js';
export { startWebhooks, type WebhookRunner, type WebhookRunnerOptions } from './backend/webhook-runner.js';
export { deliverWebhooks } from './backend/webhook-round.js';
export { replayWebhook, enableWebhook, type DeliveryRound, type EnableWebhookOptions, type WebhookDelivery } from './backend/webhooks.js';
export type { WebhookDeliveries } from './backend/webhook-together.js';
export type { Gap } from './sync/feed/deliveries.js';
export { changeFeedStatus, turnOffChangeFeed, type FeedStatus } from './backend/feed-switch.js';
export { verifyWebhook, WebhookSignatureError, type VerifyWebhookOptions } from './base/webhook-signature.js';
// A space's history: as of a version, a key's changes, restores, reverts and erasure.
export type { HistoryOptions } from './context/context.js';
export {
  at,
  readHistory,
  restoreSpace,
  revertChanges,
  eraseData,
  HistoryGoneError,
  ERASED_TOPIC,
  type AtOptions,
  type AsOf,
  type ReadHistoryOptions,
  type HistoryPage,
  type RestoreOptions,
  type RestoreResult,
  type RevertOptions,
  type RevertResult,
  type EraseResult,
  type EraseTarget,
  type PlannedChange,
  type RevertConflict,
  type ConflictPolicy,
} from './backend/history.js';
export type { LoggedChange } from './sync/history/log-reads.js';
export { handleHistory } from './server/handle-history.js';
