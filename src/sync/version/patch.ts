import type { JSONValue } from '../../protocol/json.js';
import type { PatchOperation } from '../../protocol/pull-response.js';
import type { ScanOptions, StorageTransaction, StoredValue } from '../../storage/types.js';
import { getMany } from '../../storage/write-buffer.js';
import { bucketOfPrefix, encodeVersion, type SpaceKeys, VERSION_FIELD } from './keys.js';
import type { Entry } from './records.js';
import { coversKey, type Prefixes } from './prefixes.js';
import { recordOf } from '../../storage/records.js';

// The patches of the global version strategy, read from a space's entries (`e/`) and its
// version index (`v/`); see keys.ts. A view, when there is one, narrows each to its prefixes.

/**
 * A put whose value is the JSON text the store holds, copied into the answer as it is: a store
 * that keeps values as text (`scanText`) then never has them parsed and serialised again.
 */
export interface TextPut {
  op: 'put';
  key: string;
  /** The value's JSON text. */
  text: string;
}

/** A patch as a pull computes it: operations, some of whose puts may hold their value as text. */
export type Patch = ReadonlyArray<PatchOperation | TextPut>;

/**
 * The JSON text of the value in an entry record's text (see records.ts), or undefined for a
 * tombstone. A live entry's record is `{"ver":…,"val":…}` as `JSON.stringify` wrote it: the
 * value is the text between, taken without parsing it.
 */
export function entryValueText(record: string): string | undefined {
  return entryText(record).text;
}

/** {@link entryValueText}, and the entry's version. */
export function entryText(record: string): { ver: number; text: string | undefined } {
  const head = ENTRY_HEAD.exec(record);
  if (head !== null && record.endsWith('}')) return { ver: Number(head[1]), text: record.slice(head[0].length, -1) };
  // Any other shape: a tombstone, or a record some other writer made.
  const entry = JSON.parse(record) as Entry;
  return { ver: entry.ver, text: entry.del ? undefined : JSON.stringify(entry.val) };
}

/** How a live entry's record starts, as `#stamp` writes it (`{ver, val}`, in that order). */
const ENTRY_HEAD = /^\{"ver":(\d+),"val":/;

/**
 * The changes after version `since` up to `latest` (the space's version), in version order, of
 * the keys `keep` accepts (all without it).
 */
export async function changesSince(
  tx: StorageTransaction,
  keys: SpaceKeys,
  since: number,
  latest: number,
  keep?: (key: string) => boolean,
): Promise<PatchOperation[]> {
  const patch: PatchOperation[] = [];
  // An up-to-date client, the most common pull: no version after the latest to look for.
  if (since >= latest) return patch;
  const prefix = keys.versionPrefix;
  const start = { key: prefix + encodeVersion(since + 1) };
  for await (const page of scanPages(tx, { prefix, start })) {
    let changed = page.map(([indexKey]) => indexKey.slice(prefix.length + VERSION_FIELD));
    if (keep !== undefined) changed = changed.filter(keep);
    // One read for the page's entries: one round trip on a database.
    patch.push(...(await readChanges(tx, keys, changed)));
  }
  return patch;
}

/** Which versions a view patch spans: after `since`, up to `latest`, and the prefix index's first. */
export interface PatchSpan {
  since: number;
  latest: number;
  /** Every change from this version on is in the prefix index; undefined: the index is not kept. */
  prefixIndexFrom: number | undefined;
}

/**
 * What a client holding the data under `from` as of `span.since` needs to hold the data under
 * `to` now: the changes since then in what both cover, every live entry of what only `to`
 * covers, and a delete for every key of what only `from` covers that the client held. Its
 * cost follows the changes in view and the entries that enter or leave it, not the size of the
 * view nor (with the prefix index) the changes elsewhere in the space.
 *
 * `'reset'` when what only `from` covers changed after `since`: a key written there since may be
 * one the client never held, which it must not learn the name of (the caller lost access), and
 * which of those it held is not known without history. The caller then sends everything in `to`.
 */
export async function viewPatch(tx: StorageTransaction, keys: SpaceKeys, span: PatchSpan, from: Prefixes, to: Prefixes): Promise<Patch | 'reset'> {
  const skip = keys.entryPrefix.length;
  const gone: PatchOperation[] = [];
  for (const { prefix, except } of from.minus(to)) {
    for await (const page of regionPages((options) => tx.scan(options), keys, prefix)) {
      for (const [row, stored] of page) {
        const entry = recordOf<Entry>(stored);
        const key = row.slice(skip);
        if (except.covers(key)) continue;
        if (entry.ver > span.since) return 'reset';
        // Unchanged since the cookie: the client holds it, unless it is a delete it applied.
        if (!entry.del) gone.push({ op: 'del', key });
      }
    }
  }
  const patch = await changesInView(tx, keys, span, from.intersect(to));
  for (const { prefix, except } of to.minus(from)) {
    for await (const page of regionPages((options) => tx.scan(options), keys, prefix)) {
      for (const [key, value] of live(page, skip)) if (!except.covers(key)) patch.push({ op: 'put', key, value });
    }
  }
  patch.push(...gone);
  return patch;
}

/**
 * The changes in `span` under `prefixes`. When every prefix falls in a bucket of the prefix index
 * and the index covers the span, the changes are read from each prefix's bucket, unless the
 * version index turns out to hold fewer: one page of it, as long as the buckets are few, tells.
 * Otherwise the version index is read whole and filtered.
 */
async function changesInView(tx: StorageTransaction, keys: SpaceKeys, span: PatchSpan, prefixes: Prefixes): Promise<PatchOperation[]> {
  const { since, latest, prefixIndexFrom } = span;
  if (since >= latest || prefixes.list.length === 0) return [];
  const buckets = prefixIndexFrom !== undefined && since + 1 >= prefixIndexFrom ? bucketsFor(prefixes) : undefined;
  // Each bucket is a read of its own (a round trip on a database): past a few dozen, as in a view
  // naming each of a thousand flat keys, one pass over the version index costs less.
  if (buckets === undefined || buckets.size > MAX_BUCKETS) return changesSince(tx, keys, since, latest, (key) => prefixes.covers(key));
  // A power of two: SQLite runs a scan faster with its LIMIT written into the SQL (sqlite-core.ts).
  const budget = 2 ** Math.ceil(Math.log2(32 + 4 * buckets.size));
  const first = await tx.scan({ prefix: keys.versionPrefix, start: { key: keys.versionPrefix + encodeVersion(since + 1) }, limit: budget });
  if (first.length < budget) {
    const changed = first.map(([row]) => row.slice(keys.versionPrefix.length + VERSION_FIELD)).filter((key) => prefixes.covers(key));
    return readChanges(tx, keys, changed);
  }
  const patch: PatchOperation[] = [];
  for (const [bucket, within] of buckets) {
    const index = keys.prefixIndex(bucket);
    for await (const page of scanPages(tx, { prefix: index, start: { key: index + encodeVersion(since + 1) } })) {
      const changed = page.map(([row]) => row.slice(index.length + VERSION_FIELD)).filter((key) => within.some((prefix) => coversKey(prefix, key)));
      patch.push(...(await readChanges(tx, keys, changed)));
    }
  }
  return patch;
}

/** Buckets a pull reads one by one; a view of more reads the version index (see changesInView). */
const MAX_BUCKETS = 64;

/**
 * The prefixes grouped by the bucket of the prefix index each falls in, or undefined when one
 * falls in none (it covers keys of many buckets, like `doc/`, `todo` or `''`: only the version
 * index holds all it covers).
 */
function bucketsFor(prefixes: Prefixes): Map<string, string[]> | undefined {
  const buckets = new Map<string, string[]>();
  for (const prefix of prefixes.list) {
    const bucket = bucketOfPrefix(prefix);
    if (bucket === undefined) return undefined;
    const known = buckets.get(bucket);
    if (known === undefined) buckets.set(bucket, [prefix]);
    else known.push(prefix);
  }
  return buckets;
}

/**
 * The entry rows of the keys `prefix` covers (`coversKey`), a page at a time, through `scan`: for
 * `list/a`, the key itself and the keys under `list/a/`, never those of `list/ab`.
 */
async function* regionPages<V>(
  scan: (options: ScanOptions) => Promise<ReadonlyArray<readonly [string, V]>>,
  keys: SpaceKeys,
  prefix: string,
): AsyncGenerator<ReadonlyArray<readonly [string, V]>> {
  if (prefix !== '' && !prefix.endsWith('/')) {
    // The key itself sorts first among the rows it starts.
    const row = keys.entry(prefix);
    const [first] = await scan({ prefix: row, limit: 1 });
    if (first !== undefined && first[0] === row) yield [first];
    prefix += '/';
  }
  yield* pagesOf(scan, { prefix: keys.entry(prefix) });
}

/** The operations for changed keys, their entries read in one round trip. */
async function readChanges(tx: StorageTransaction, keys: SpaceKeys, changed: readonly string[]): Promise<PatchOperation[]> {
  if (changed.length === 0) return [];
  const entries = await getMany(
    tx,
    changed.map((key) => keys.entry(key)),
  );
  return changed.map((key, i) => {
    const entry = recordOf<Entry>(entries[i]!);
    return entry.del ? { op: 'del', key } : { op: 'put', key, value: entry.val };
  });
}

/** The live entries of a page of `e/` rows, with user keys (the row key less `skip` chars). */
export function* live(page: ReadonlyArray<readonly [string, StoredValue]>, skip: number): Generator<readonly [string, JSONValue]> {
  for (const [key, entry] of page) {
    const { del, val } = recordOf<Entry & { val?: JSONValue }>(entry);
    if (!del) yield [key.slice(skip), val!];
  }
}

/**
 * Every entry matching `options`, read from the store a page at a time. Pages start small (a
 * mutator's scan often wants a few entries) and double up to a few thousand rows, so a full pull
 * of a large space costs a few dozen queries on a database, not hundreds.
 */
export function scanPages(tx: StorageTransaction, options: ScanOptions): AsyncGenerator<ReadonlyArray<readonly [string, StoredValue]>> {
  return pagesOf((page) => tx.scan(page), options);
}

/** {@link scanPages} through any scan: `StorageTransaction.scan`, or `scanText` for values as text. */
export async function* pagesOf<V>(
  scan: (options: ScanOptions) => Promise<ReadonlyArray<readonly [string, V]>>,
  options: ScanOptions,
): AsyncGenerator<ReadonlyArray<readonly [string, V]>> {
  let start = options.start;
  for (let size = FIRST_PAGE; ; size = Math.min(size * 2, LAST_PAGE)) {
    const page = await scan({ prefix: options.prefix, start, limit: size });
    if (page.length > 0) yield page;
    if (page.length < size) return;
    start = { key: page[page.length - 1]![0], exclusive: true };
  }
}

/** The entries the first page of a scan holds (a pull's plan reads that page ahead). */
export const FIRST_PAGE = 128;
const LAST_PAGE = 4096;
