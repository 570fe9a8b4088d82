import type { SyncContext } from '../context/context.js';
import { clientGroups, migrationsOf } from '../backend/inspect.js';
import { spaceRecord } from './spaces.js';
import { SpaceKeys } from '../sync/version/keys.js';
import type { Meta } from '../sync/version/records.js';
import { feedFrom, type LogRow } from '../sync/feed/change-log.js';
import { checkpointRecords } from '../sync/history/checkpoint-records.js';
import { readRejected } from '../sync/schema/rejected.js';
import { importOfArea } from '../sync/dumps/dumped-groups.js';
import { stagingStarted } from '../sync/dumps/import-batch.js';
import type { SpacePage } from './api-types.js';

/** Client groups a space's page lists, at most (and ten times as many clients). */
const GROUPS = 1_000;

/** Staging areas listed, at most. */
const AREAS = 100;

/**
 * One space's page: what `inspect(ctx, space)` tells, read in bounded steps rather than counted
 * (its entries, bytes and history from the space's record; its first {@link GROUPS} client groups;
 * its change log's start and checkpoints, not its rows), so that it opens as fast for a space of
 * a million entries and a long history as for an empty one.
 */
export async function spacePage(ctx: SyncContext, space: string): Promise<SpacePage> {
  const storage = ctx.storage;
  const keys = new SpaceKeys(space);
  const read = await storage.transaction(
    async (tx) => {
      const meta = (await tx.get(keys.meta)) as Meta | undefined;
      const [oldest] = await tx.scan({ prefix: keys.logPrefix, limit: 1 });
      const checkpoints = [...(await checkpointRecords(tx, keys))].map(([version, record]) => ({ version, done: record.done }));
      const rejectedMutations = await readRejected(tx, keys);
      // One row of each unfinished import's staging area: the scan skips to the next area each time.
      const staging: Array<{ started: number }> = [];
      let after: string | undefined;
      for (let n = 0; n < AREAS; n++) {
        const [row] = await tx.scan({ prefix: keys.stagingPrefix, start: after === undefined ? undefined : { key: after, exclusive: true }, limit: 1 });
        if (row === undefined) break;
        const name = row[0].slice(keys.stagingPrefix.length).split('/', 1)[0]!;
        const id = importOfArea(name);
        if (!staging.some((area) => area.started === stagingStarted(id))) staging.push({ started: stagingStarted(id) });
        // '0' follows '/': past every row of this area.
        after = `${keys.stagingPrefix}${name}0`;
      }
      return { meta, oldest: oldest?.[1] as LogRow | undefined, checkpoints, rejectedMutations, staging };
    },
    { readOnly: true, space },
  );
  const [{ groups, more }, migrations, record] = await Promise.all([
    clientGroups(storage, space, GROUPS),
    migrationsOf(ctx, space),
    spaceRecord(ctx, space, read.meta),
  ]);
  const { meta } = read;
  const active = groups.filter((group) => !group.expired);
  const recently = ctx.clock() - (ctx.schema?.activeMs ?? 7 * 24 * 60 * 60 * 1000);
  const byVersion = new Map<string, number>();
  for (const { lastActive, schemaVersion } of active)
    if (lastActive !== null && lastActive >= recently) byVersion.set(schemaVersion ?? '?', (byVersion.get(schemaVersion ?? '?') ?? 0) + 1);
  const lastActivity = active.reduce<number | null>(
    (latest, { lastActive }) => (lastActive !== null && (latest === null || lastActive > latest) ? lastActive : latest),
    null,
  );
  const log = read.oldest !== undefined || meta?.feedFrom !== undefined;
  return {
    ...record,
    clientGroups: active.length,
    lastActivity,
    groups,
    groupsCut: more,
    staging: read.staging,
    ...(log && { changes: { from: feedFrom(meta) ?? null, oldest: read.oldest?.at ?? null, checkpoints: read.checkpoints } }),
    // fromEntries defines own properties: a version named "__proto__" is one like any other.
    ...(byVersion.size > 0 && { schemaVersions: Object.fromEntries(byVersion) }),
    ...(read.rejectedMutations.length > 0 && { rejected: read.rejectedMutations.length }),
    rejectedMutations: read.rejectedMutations,
    ...(migrations !== undefined && { migrations }),
  };
}
