import type { SyncContext } from '../context/context.js';
import { eachRow } from '../storage/each-row.js';
import { allSpaces } from '../context/collect-garbage.js';
import { importOfArea } from '../sync/dumps/dumped-groups.js';
import { stagingStarted } from '../sync/dumps/import-batch.js';
import { utf8Length } from '../base/utf8.js';
import { SpaceKeys, STAGING_MARK } from '../sync/version/keys.js';
import { quotaOf, type SpaceQuota } from '../sync/transactions/quota.js';
import { storedLogRowBytes, tombstoneBytes } from '../sync/history/history-bytes.js';
import type { Entry, GroupRecord, Meta, StoredClient } from '../sync/version/records.js';
import { checkSpace } from './transact.js';
import { checkContext } from '../context/state.js';
import { setOwn } from '../base/own.js';
import { feedFrom, type LogRow } from '../sync/feed/change-log.js';
import { deliveryID, deliveryStates } from '../sync/feed/deliveries.js';
import { parseCursor, readFeedPage } from '../sync/feed/feed-pages.js';
import type { StorageTransaction } from '../storage/types.js';
import type { JSONValue } from '../protocol/json.js';
import { checkpointRecords } from '../sync/history/checkpoint-records.js';
import { checkpointRowBytes } from '../sync/history/checkpoints.js';
import { type KeptRejection, readRejected } from '../sync/schema/rejected.js';

/** How long a client group counts as active in {@link SpaceSummary.schemaVersions} by default: 7 days. */
const ACTIVE_MS = 7 * 24 * 60 * 60 * 1000;
import { migrationRecords } from '../sync/migrations/migration-step.js';
import { type SpaceMigration, spaceMigration } from './migrate.js';
import { recordOf } from '../storage/records.js';

/** One space at a glance. */
export interface SpaceSummary {
  space: string;
  /** Live entries. */
  entries: number;
  /** Their keys and values as UTF-8 JSON text, in bytes: about what a full pull carries. */
  bytes: number;
  /** The bytes of its history, kept until retention lets it go: its change log, its history's checkpoints and the tombstones of deleted entries, as a quota's `historyBytes` counts them. */
  history: number;
  /** What the space may hold, when `SyncOptions.quotas` gives it a quota: compare with `entries` and `bytes`. */
  quota?: SpaceQuota;
  /** On a routed storage (`routedStorage`): the name of the store that holds the space. */
  store?: string;
  /** The space's version: it grows with every push (and backend write) that changed the space, and skips ahead once after its store came back from a restart or a failover. 0: never written. */
  version: number;
  /** Client groups that pushed and are not expired. */
  clientGroups: number;
  /**
   * The latest time, in milliseconds since the epoch, a client group of the space was recorded
   * active, or null. Recorded coarsely, at most every tenth of `retention.clientGroupsMs` per group,
   * so it may lag by up to that much.
   */
  lastActivity: number | null;
  /**
   * The staging areas of its imports that have not finished: running now, or left behind by one
   * that was killed, which housekeeping (`collectGarbage`) removes a day after it began.
   */
  staging: StagingSummary[];
  /** The change log (see `SyncOptions.changes`), when the space has one. */
  changes?: ChangeLogSummary;
  /** Each webhook's deliveries in the space, by name, once one looked at it. */
  webhooks?: Record<string, WebhookSummary>;
  /**
   * Client groups recorded active within `schema.activeMs` (default 7 days), by the schema version
   * they sync with (`'?'`: recorded before viewsync kept it): when an older version has none, its
   * window can close. Absent when none is.
   */
  schemaVersions?: Record<string, number>;
  /** Mutations of older schema versions that could not be applied, kept (the latest 1,000): how many. Absent when none. */
  rejected?: number;
}

/** A webhook's deliveries in one space. */
export interface WebhookSummary {
  /** Delivered up to this cursor of the change log. */
  cursor: string;
  /** Versions the space is past the cursor (not every one holds a change the webhook wants). */
  lagVersions: number;
  /** How long ago the oldest change after the cursor was committed, in milliseconds; 0 when none waits. */
  lagMs: number;
  /** Deliveries made, and attempts that failed. */
  delivered: number;
  failures: number;
  /** When the last delivery was made, or null. */
  lastDelivered: number | null;
  /** The batch being delivered: the same changes under the same ID at each attempt. */
  pending?: { delivery: string; attempts: number; nextAttempt: number; error?: string };
  /** Deliveries asked again (`replayWebhook`) and not yet sent. */
  replays: number;
  /** Set once it failed for its `retryForMs` (or fell behind the change log): no delivery until `enableWebhook`. */
  disabled?: { at: number; reason: string };
}

/** A space's change log at a glance. */
export interface ChangeLogSummary {
  /** Rows it holds: changes and events. */
  rows: number;
  /** The cursor the log is read from: the version after which it holds every change; null when it is not whole now (a write without the feed). */
  from: number | null;
  /** When its oldest row was committed (ms since the epoch), or null when it is empty. */
  oldest: number | null;
  /** The checkpoints of the space's history (`SyncOptions.history`), oldest first: each one's version, rows, and whether it is whole (housekeeping writes one a page at a time). */
  checkpoints: Array<{ version: number; rows: number; done: boolean }>;
}

/** An unfinished import's staging area: the dump's entries (and client group lines) read so far. */
export interface StagingSummary {
  /** When the import began, in milliseconds since the epoch. */
  started: number;
  /** Entries and client group lines staged. */
  rows: number;
  /** Their keys and values as UTF-8 JSON text, in bytes. */
  bytes: number;
}

/** One space in detail: its summary, its client groups and its data migrations. */
export interface SpaceDetail extends SpaceSummary {
  groups: GroupSummary[];
  /** The kept mutations of older schema versions that could not be applied, oldest first (see `SyncOptions.schema`). */
  rejectedMutations: KeptRejection[];
  /** The data migrations (`runMigration`) that ran in the space, by name: done, or how far each got; absent when none did. */
  migrations?: Record<string, SpaceMigration>;
}

/** A client group and its clients. */
export interface GroupSummary {
  /** The group's user, or null when requests are anonymous. */
  userID: string | null;
  clientGroupID: string;
  /** When it was last recorded active (coarse, see {@link SpaceSummary.lastActivity}), or null once expired. */
  lastActive: number | null;
  /** Whether housekeeping expired it: its clients are gone and its next request starts over. */
  expired: boolean;
  /** The schema version it syncs with, or null when not recorded (expired, or recorded before viewsync kept it). */
  schemaVersion: string | null;
  /** Its clients' lastMutationIDs, by client ID. */
  clients: Record<string, number>;
}

/**
 * What a store holds, as plain data: every space with its entry count, size, quota (when
 * `ctx.quotas` sets one), version, client groups, last activity and unfinished imports
 * (`inspect(ctx)`), or one space with its groups and their clients' lastMutationIDs
 * (`inspect(ctx, space)`). Counting reads every entry, in short read-only
 * transactions of a few thousand rows, so it costs about what an export does and holds up no push.
 *
 * @example
 * for (const { space, entries, bytes } of (await inspect(ctx)).spaces) console.log(space, entries, bytes);
 */
export function inspect(ctx: SyncContext): Promise<{ spaces: SpaceSummary[] }>;
export function inspect(ctx: SyncContext, space: string): Promise<SpaceDetail>;
export async function inspect(ctx: SyncContext, space?: string): Promise<{ spaces: SpaceSummary[] } | SpaceDetail> {
  checkContext(ctx);
  if (space !== undefined) {
    checkSpace(space);
    const { summary, groups } = await survey(ctx, space);
    const keys = new SpaceKeys(space);
    const rejectedMutations = await ctx.storage.transaction((tx) => readRejected(tx, keys), { readOnly: true, space });
    const migrations = await migrationsOf(ctx, space);
    return { ...summary, groups, rejectedMutations, ...(migrations !== undefined && { migrations }) };
  }
  const spaces: SpaceSummary[] = [];
  for (const name of await allSpaces(ctx.storage)) spaces.push((await survey(ctx, name)).summary);
  return { spaces };
}

async function survey(ctx: SyncContext, space: string): Promise<{ summary: SpaceSummary; groups: GroupSummary[] }> {
  const storage = ctx.storage;
  const quota = quotaOf(ctx.quotas, space);
  const store = await storage.parts?.locate(space);
  const keys = new SpaceKeys(space);
  const meta = (await storage.transaction((tx) => tx.get(keys.meta), { readOnly: true, space })) as Meta | undefined;
  let entries = 0;
  let bytes = 0;
  await eachRow(
    storage,
    keys.entryPrefix,
    (key, value) => {
      const entry = recordOf<Entry>(value);
      if (entry.del) return;
      entries++;
      bytes += utf8Length(key.slice(keys.entryPrefix.length)) + utf8Length(JSON.stringify(entry.val));
    },
    space,
  );
  const staging = new Map<string, StagingSummary>();
  await eachRow(
    storage,
    keys.stagingPrefix,
    (row, value) => {
      const rest = row.slice(keys.stagingPrefix.length);
      const name = rest.slice(0, rest.indexOf('/'));
      const id = importOfArea(name);
      let area = staging.get(id);
      if (area === undefined) staging.set(id, (area = { started: stagingStarted(id), rows: 0, bytes: 0 }));
      // The import's mark says it is there, and is none of what it staged.
      if (name.endsWith(STAGING_MARK)) return;
      area.rows++;
      area.bytes += utf8Length(rest.slice(name.length + 1)) + utf8Length(JSON.stringify(value));
    },
    space,
  );
  let log: ChangeLogSummary | undefined;
  let history = 0;
  await eachRow(
    storage,
    keys.logPrefix,
    (_, value) => {
      log ??= { rows: 0, from: feedFrom(meta) ?? null, oldest: (value as LogRow).at, checkpoints: [] };
      log.rows++;
      history += storedLogRowBytes(value as LogRow);
    },
    space,
  );
  await eachRow(storage, keys.tombstonePrefix, (row) => void (history += tombstoneBytes(keys.tombstoneKey(row))), space);
  if (log === undefined && meta?.feedFrom !== undefined) log = { rows: 0, from: feedFrom(meta) ?? null, oldest: null, checkpoints: [] };
  const records = await storage.transaction((tx) => checkpointRecords(tx, keys), { readOnly: true, space });
  for (const [version, record] of records) {
    const checkpoint = { version, rows: 0, done: record.done };
    const prefix = keys.checkpoint(version);
    await eachRow(
      storage,
      prefix,
      (row, value) => {
        checkpoint.rows++;
        history += checkpointRowBytes(row.slice(prefix.length), value as JSONValue);
      },
      space,
    );
    log?.checkpoints.push(checkpoint);
  }
  const webhooks = await storage.transaction((tx) => webhooksOf(tx, space, meta, ctx.clock()), { readOnly: true, space });
  const { groups: list } = await clientGroups(storage, space, Infinity);
  const active = list.filter((group) => !group.expired);
  const recently = ctx.clock() - (ctx.schema?.activeMs ?? ACTIVE_MS);
  const byVersion = new Map<string, number>();
  for (const { lastActive, schemaVersion } of active)
    if (lastActive !== null && lastActive >= recently) byVersion.set(schemaVersion ?? '?', (byVersion.get(schemaVersion ?? '?') ?? 0) + 1);
  // fromEntries defines own properties: a version named "__proto__" is one like any other.
  const schemaVersions: Record<string, number> = Object.fromEntries(byVersion);
  let rejected = 0;
  await eachRow(storage, keys.rejectedPrefix, () => void rejected++, space);
  const lastActivity = active.reduce<number | null>(
    (latest, { lastActive }) => (lastActive !== null && (latest === null || lastActive > latest) ? lastActive : latest),
    null,
  );
  return {
    summary: {
      space,
      entries,
      bytes,
      history,
      ...(quota && { quota: { ...quota } }),
      ...(store !== undefined && { store }),
      version: meta?.version ?? 0,
      clientGroups: active.length,
      lastActivity,
      staging: [...staging.values()],
      ...(log !== undefined && { changes: log }),
      ...(webhooks !== undefined && { webhooks }),
      ...(Object.keys(schemaVersions).length > 0 && { schemaVersions }),
      ...(rejected > 0 && { rejected }),
    },
    groups: list,
  };
}

/**
 * The client groups of `space` with their clients' lastMutationIDs: the first `limit` groups (in
 * key order), and their clients among the first `limit` × 10 client rows (`more`: either was cut).
 */
export async function clientGroups(storage: SyncContext['storage'], space: string, limit: number): Promise<{ groups: GroupSummary[]; more: boolean }> {
  const keys = new SpaceKeys(space);
  const groups = new Map<string, GroupSummary>();
  const idOf = (userID: string | undefined, clientGroupID: string) => JSON.stringify([userID ?? null, clientGroupID]);
  let more = false;
  await eachRow(
    storage,
    keys.groupPrefix,
    (key, value) => {
      if (groups.size === limit) return void (more = true);
      const { userID, clientGroupID } = keys.groupOf(key);
      const record = value as GroupRecord;
      const group: GroupSummary = { userID: userID ?? null, clientGroupID, lastActive: null, expired: false, schemaVersion: null, clients: {} };
      if ('expired' in record) group.expired = true;
      else {
        group.lastActive = record.seen;
        group.schemaVersion = record.schema ?? null;
      }
      groups.set(idOf(userID, clientGroupID), group);
    },
    space,
    limit === Infinity ? undefined : limit + 1,
  );
  let clients = 0;
  await eachRow(
    storage,
    keys.clientPrefix,
    (key, value) => {
      if (clients++ === limit * 10) return void (more = true);
      const { userID, clientID } = keys.clientOf(key);
      const client = recordOf<StoredClient>(value);
      const id = idOf(userID, client.group);
      let group = groups.get(id);
      // A client whose group has no record (written before viewsync kept them) is shown under it all the same, when the list is whole.
      if (group === undefined && limit === Infinity)
        groups.set(id, (group = { userID: userID ?? null, clientGroupID: client.group, lastActive: null, expired: false, schemaVersion: null, clients: {} }));
      // setOwn: a client may be named "__proto__".
      if (group !== undefined) setOwn(group.clients, clientID, client.lmid);
    },
    space,
    limit === Infinity ? undefined : limit * 10 + 1,
  );
  return { groups: [...groups.values()], more };
}

/** The webhooks' delivery states in `space`, with their lag; undefined when none looked at it. */
async function webhooksOf(tx: StorageTransaction, space: string, meta: Meta | undefined, now: number): Promise<Record<string, WebhookSummary> | undefined> {
  const states = await deliveryStates(tx, space);
  if (states.size === 0) return undefined;
  const summaries: Record<string, WebhookSummary> = {};
  for (const [name, state] of states) {
    const cursor = parseCursor(state.cursor);
    let lagMs = 0;
    try {
      const next = (await readFeedPage(tx, space, cursor, { limit: 1, maxChars: Number.MAX_SAFE_INTEGER })).changes[0];
      if (next !== undefined) lagMs = Math.max(0, now - next.at);
    } catch {
      // The log no longer holds what follows the cursor: the state says so once a delivery tries.
    }
    const { pending } = state;
    setOwn(summaries, name, {
      cursor: state.cursor,
      lagVersions: Math.max(0, (meta?.version ?? 0) - cursor.version),
      lagMs,
      delivered: state.delivered,
      failures: state.failures,
      lastDelivered: state.lastAt ?? null,
      ...(pending && {
        pending: {
          delivery: deliveryID(space, pending),
          attempts: pending.attempts,
          nextAttempt: pending.nextAt,
          ...(pending.error !== undefined && { error: pending.error }),
        },
      }),
      replays: state.replays?.length ?? 0,
      ...(state.disabled && { disabled: { ...state.disabled } }),
    });
  }
  return summaries;
}

/** Each webhook's deliveries in `space` (see {@link SpaceSummary.webhooks}), without the rest of a survey: what the inspector's webhooks list reads. */
export async function webhookSummaries(ctx: SyncContext, space: string): Promise<Record<string, WebhookSummary>> {
  const keys = new SpaceKeys(space);
  return ctx.storage.transaction(async (tx) => (await webhooksOf(tx, space, (await tx.get(keys.meta)) as Meta | undefined, ctx.clock())) ?? {}, {
    readOnly: true,
    space,
  });
}

/** The data migrations that ran in `space`, by name (see migrate.ts). */
export async function migrationsOf(ctx: SyncContext, space: string): Promise<Record<string, SpaceMigration> | undefined> {
  const records = await ctx.storage.transaction((tx) => migrationRecords(tx, space), { readOnly: true, space });
  if (records.size === 0) return undefined;
  const out: Record<string, SpaceMigration> = {};
  for (const [name, record] of records) setOwn(out, name, spaceMigration(space, record));
  return out;
}
