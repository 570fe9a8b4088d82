import type { Storage, StorageTransaction, StoredValue } from '../storage/types.js';
import { getMany } from '../storage/write-buffer.js';
import { bucketOf, decodeVersion, encodeVersion, SpaceKeys, VERSION_FIELD } from '../sync/version/keys.js';
import type { Entry, Meta } from '../sync/version/records.js';

/**
 * Copying one space's rows from one store to another, as they are stored: its meta record (its
 * version and epoch, so every client's cookie stays good), entries and their indexes, client
 * groups, clients and their lastMutationIDs, views and import staging. Nothing is translated, so
 * a moved space is the same space, and its clients go on without a reset.
 */

/** Rows per transaction, copying and removing. */
const PAGE = 1_000;

/**
 * Copies every row of `space` from `source`, as of one snapshot, into `target`, a page per
 * transaction, each of which `check` may refuse (the target's copy is not in use meanwhile);
 * resolves with the snapshot's version.
 */
export async function copyAll(
  source: Storage,
  target: Storage,
  space: string,
  check: (tx: StorageTransaction) => Promise<void>,
  copied: (rows: number) => void | Promise<void>,
): Promise<number> {
  const keys = new SpaceKeys(space);
  const { versioned, whole } = keys.rowPrefixes;
  // One snapshot: on PostgreSQL it holds no lock; on a store in process it holds the space's
  // writes back until the copy ends (as an export does).
  return source.transaction(
    async (from) => {
      const meta = (await from.get(keys.meta)) as Meta | undefined;
      for (const prefix of [...versioned, ...whole]) {
        let after: string | undefined;
        for (;;) {
          const page = await from.scan({ prefix, start: after === undefined ? undefined : { key: after, exclusive: true }, limit: PAGE });
          if (page.length > 0) {
            await target.transaction(
              async (to) => {
                // In the page's own transaction: once another move takes the target over, no page of this one lands.
                await check(to);
                for (const [key, value] of page) await to.put(key, value);
              },
              { readOnly: false, space },
            );
            await copied(page.length);
          }
          if (page.length < PAGE) break;
          after = page.at(-1)![0];
        }
      }
      // Last: the meta record says which version the rows above are of.
      if (meta !== undefined) await target.transaction(async (to) => (await check(to), to.put(keys.meta, meta)), { readOnly: false, space });
      return meta?.version ?? 0;
    },
    { readOnly: true, space },
  );
}

/** What one catch-up read from the source, to write into the target. */
interface Changes {
  meta: Meta | undefined;
  /** Keys of entries changed after the version caught up from, with their rows in the source. */
  entries: Array<{ key: string; version: number; rows: Map<string, StoredValue | undefined> }>;
  /** Every row under the client records' prefixes. */
  whole: Map<string, StoredValue>;
  /**
   * The change log's rows of versions after the one caught up from (the log grows at its end),
   * or, when an erasure rewrote older rows since (`Meta.erasures`), every row of it: `whole`.
   */
  log: ReadonlyArray<readonly [string, StoredValue]>;
  wholeLog: boolean;
}

/**
 * Brings `target`'s copy of `space` up to `source`'s: entries changed after `since` (and their
 * rows in the version, tombstone and prefix indexes, whose rows at the entry's old version in the
 * target go), and every client record, view and staging row, compared whole. One snapshot of the
 * source, one transaction of the target, in which `finish` may check and write the target's
 * route record. Resolves with the source's version and how many rows it wrote or removed.
 */
export async function catchUp(
  source: Storage,
  target: Storage,
  space: string,
  since: number,
  finish: (tx: StorageTransaction, version: number) => Promise<void>,
): Promise<{ version: number; rows: number }> {
  const keys = new SpaceKeys(space);
  // The erasures the target's copy has seen: its meta record is the source's as last copied.
  const copied = await target.transaction(async (tx) => ((await tx.get(keys.meta)) as Meta | undefined)?.erasures ?? 0, { readOnly: true, space });
  const changes = await source.transaction((tx) => readChanges(tx, keys, since, copied), { readOnly: true, space });
  const version = changes.meta?.version ?? 0;
  const rows = await target.transaction(
    async (tx) => {
      let written = 0;
      const put = (key: string, value: StoredValue | undefined) => (written++, value === undefined ? tx.del(key) : tx.put(key, value));
      const old = (await getMany(
        tx,
        changes.entries.map(({ key }) => keys.entry(key)),
      )) as Array<Entry | undefined>;
      for (const [i, { key, rows }] of changes.entries.entries()) {
        const was = old[i];
        // The row each index held for the entry's old version is gone in the source: the entry moved on.
        if (was !== undefined) for (const row of indexRows(keys, key, was.ver)) if (!rows.has(row)) await put(row, undefined);
        for (const [row, value] of rows) await put(row, value);
      }
      const { whole } = keys.rowPrefixes;
      for (const prefix of whole) {
        for (const [key, value] of await tx.scan({ prefix })) {
          const wanted = changes.whole.get(key);
          if (wanted === undefined) await put(key, undefined);
          else if (JSON.stringify(wanted) === JSON.stringify(value)) changes.whole.delete(key);
        }
      }
      for (const [key, value] of changes.whole) await put(key, value);
      if (changes.wholeLog) {
        // Rows the source no longer holds (trimmed by housekeeping meanwhile) go too.
        const kept = new Set(changes.log.map(([key]) => key));
        for (const [key] of await tx.scan({ prefix: keys.logPrefix })) if (!kept.has(key)) await put(key, undefined);
      }
      for (const [key, value] of changes.log) await put(key, value);
      if (changes.meta !== undefined) await tx.put(keys.meta, changes.meta);
      await finish(tx, version);
      return written;
    },
    { readOnly: false, space },
  );
  return { version, rows };
}

async function readChanges(tx: StorageTransaction, keys: SpaceKeys, since: number, erasures: number): Promise<Changes> {
  const meta = (await tx.get(keys.meta)) as Meta | undefined;
  const changed = await tx.scan({ prefix: keys.versionPrefix, start: { key: keys.versionPrefix + encodeVersion(since + 1), exclusive: false } });
  const entries = changed.map(([row]) => ({
    key: row.slice(keys.versionPrefix.length + VERSION_FIELD),
    version: decodeVersion(row.slice(keys.versionPrefix.length, keys.versionPrefix.length + VERSION_FIELD - 1)),
  }));
  // Each changed entry's rows at its new version, present or not, read in one go.
  const wanted = entries.map(({ key, version }) => [keys.entry(key), ...indexRows(keys, key, version)]);
  const values = await getMany(tx, wanted.flat());
  let at = 0;
  const withRows = entries.map((entry, i) => ({ ...entry, rows: new Map(wanted[i]!.map((row) => [row, values[at++]])) }));
  const whole = new Map<string, StoredValue>();
  for (const prefix of keys.rowPrefixes.whole) for (const [key, value] of await tx.scan({ prefix })) whole.set(key, value);
  const wholeLog = (meta?.erasures ?? 0) !== erasures;
  const log = await tx.scan({ prefix: keys.logPrefix, ...(!wholeLog && { start: { key: keys.logPrefix + encodeVersion(since + 1) } }) });
  return { meta, entries: withRows, whole, log, wholeLog };
}

/** The index rows an entry at `version` may have: in the version index, among the tombstones, in the prefix index. */
function indexRows(keys: SpaceKeys, key: string, version: number): string[] {
  const bucket = bucketOf(key);
  return [keys.version(version, key), keys.tombstone(version, key), ...(bucket === undefined ? [] : [keys.prefixIndexRow(bucket, version, key)])];
}

/**
 * Removes every row of `space` from `store` but its route record, a page per transaction: what a
 * move leaves behind in its source, or a half-made copy in its target.
 */
export async function removeAll(store: Storage, space: string, removed?: (rows: number) => void | Promise<void>): Promise<void> {
  const keys = new SpaceKeys(space);
  const { versioned, whole } = keys.rowPrefixes;
  await store.transaction((tx) => tx.del(keys.meta), { readOnly: false, space });
  for (const prefix of [...versioned, ...whole]) {
    for (;;) {
      const count = await store.transaction(
        async (tx) => {
          const page = await tx.scan({ prefix, limit: PAGE });
          for (const [key] of page) await tx.del(key);
          return page.length;
        },
        { readOnly: false, space },
      );
      if (count > 0) await removed?.(count);
      if (count < PAGE) break;
    }
  }
}
