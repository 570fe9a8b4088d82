import type { JSONValue } from '../protocol/json.js';
import type { PatchOperation } from '../protocol/pull-response.js';
import type { ScanOptions, StorageTransaction, StoredValue } from '../storage/types.js';
import { getMany } from '../storage/write-buffer.js';
import { encodeVersion, type SpaceKeys, VERSION_FIELD } from './keys.js';
import type { Entry } from './records.js';
import type { Prefixes } from './view.js';

// The patches of the global version strategy, read from a space's entries (`e/`) and its
// version index (`v/`); see keys.ts. A view, when there is one, narrows each to its prefixes.

/** Everything a client needs from nothing: a clear, then every live entry (under `view`). */
export async function resetPatch(tx: StorageTransaction, keys: SpaceKeys, view?: Prefixes): Promise<PatchOperation[]> {
  const patch: PatchOperation[] = [{ op: 'clear' }];
  const skip = keys.entryPrefix.length;
  for (const prefix of view?.list ?? ['']) {
    // Page by page rather than through an async generator per entry: an await per entry costs a
    // third of a full pull.
    for await (const page of scanPages(tx, { prefix: keys.entry(prefix) })) {
      for (const [key, value] of live(page, skip)) patch.push({ op: 'put', key, value });
    }
  }
  return patch;
}

/**
 * The changes after version `since` up to `latest` (the space's version), in version order, of
 * the keys `keep` accepts (all without it).
 */
export async function changesSince(tx: StorageTransaction, keys: SpaceKeys, since: number, latest: number, keep?: (key: string) => boolean): Promise<PatchOperation[]> {
  const patch: PatchOperation[] = [];
  // An up-to-date client, the most common pull: no version after the latest to look for.
  if (since >= latest) return patch;
  const prefix = keys.versionPrefix;
  const start = { key: prefix + encodeVersion(since + 1) };
  for await (const page of scanPages(tx, { prefix, start })) {
    let changed = page.map(([indexKey]) => indexKey.slice(prefix.length + VERSION_FIELD));
    if (keep !== undefined) changed = changed.filter(keep);
    if (changed.length === 0) continue;
    // One read for the page's entries: one round trip on a database.
    const entries = (await getMany(tx, changed.map((key) => keys.entry(key)))) as unknown as Entry[];
    changed.forEach((key, i) => {
      const entry = entries[i]!;
      patch.push(entry.del ? { op: 'del', key } : { op: 'put', key, value: entry.val });
    });
  }
  return patch;
}

/**
 * What a client holding the data under `from` as of version `since` needs to hold the data under
 * `to` now (version `latest`): the changes since then in what both cover, every live entry of what only `to`
 * covers, and a delete for every key of what only `from` covers that the client may hold. Its
 * cost follows the changes since `since` and the entries that enter or leave the view, not the
 * size of the view.
 */
export async function viewPatch(tx: StorageTransaction, keys: SpaceKeys, since: number, latest: number, from: Prefixes, to: Prefixes): Promise<PatchOperation[]> {
  const patch = await changesSince(tx, keys, since, latest, (key) => from.covers(key) && to.covers(key));
  const skip = keys.entryPrefix.length;
  for (const { prefix, except } of to.minus(from)) {
    for await (const page of scanPages(tx, { prefix: keys.entry(prefix) })) {
      for (const [key, value] of live(page, skip)) if (!except.covers(key)) patch.push({ op: 'put', key, value });
    }
  }
  for (const { prefix, except } of from.minus(to)) {
    for await (const page of scanPages(tx, { prefix: keys.entry(prefix) })) {
      for (const [row, stored] of page) {
        const entry = stored as unknown as Entry;
        const key = row.slice(skip);
        // A tombstone at or before `since` was already a delete the client applied.
        if ((!entry.del || entry.ver > since) && !except.covers(key)) patch.push({ op: 'del', key });
      }
    }
  }
  return patch;
}

/** The live entries of a page of `e/` rows, with user keys (the row key less `skip` chars). */
export function* live(page: ReadonlyArray<readonly [string, StoredValue]>, skip: number): Generator<readonly [string, JSONValue]> {
  for (const [key, entry] of page) {
    const { del, val } = entry as unknown as Entry & { val?: JSONValue };
    if (!del) yield [key.slice(skip), val!];
  }
}

/**
 * Every entry matching `options`, read from the store a page at a time. Pages start small (a
 * mutator's scan often wants a few entries) and double up to a few thousand rows, so a full pull
 * of a large space costs a few dozen queries on a database, not hundreds.
 */
export async function* scanPages(tx: StorageTransaction, options: ScanOptions): AsyncGenerator<ReadonlyArray<readonly [string, StoredValue]>> {
  let start = options.start;
  for (let size = FIRST_PAGE; ; size = Math.min(size * 2, LAST_PAGE)) {
    const page = await tx.scan({ prefix: options.prefix, start, limit: size });
    if (page.length > 0) yield page;
    if (page.length < size) return;
    start = { key: page[page.length - 1]![0], exclusive: true };
  }
}

const FIRST_PAGE = 128;
const LAST_PAGE = 4096;
