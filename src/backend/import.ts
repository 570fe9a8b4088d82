import type { JSONValue } from '../protocol/json.js';
import { checkContext } from '../context/state.js';
import type { SyncContext } from '../context/context.js';
import { afterChange } from '../context/after-change.js';
import { compareUTF8, fitsUTF8, hasLoneSurrogate } from '../base/utf8.js';
import { frozenJSONCopy } from '../sync/transactions/frozen-json.js';
import { runBatched } from '../sync/batching/group-commit.js';
import { type GroupLine, type SkippedClient, stageGroups } from '../sync/dumps/dumped-groups.js';
import { type ApplyAt, applyStep, checkStaging, claimStaging, stage, stagingID, unstage } from '../sync/dumps/import-batch.js';
import type { Limits } from '../sync/transactions/limits.js';
import { checkEnd, checkHeader, DUMP_FORMAT, type HeaderRules, isEndLine, isGroupLine, isLogLine, longestLine, missingEnd } from './dump.js';
import { checkLogRow, type DumpedLogRow, markHistory, moveLog, stageLog } from '../sync/dumps/dumped-history.js';
import { SpaceKeys } from '../sync/version/keys.js';
import type { StorageTransaction } from '../storage/types.js';
import { GroupSection } from './group-lines.js';
import { DumpError, type DumpSource, lines } from './lines.js';
import { checkSpace } from './transact.js';

/** Options for {@link importSpace}. */
export interface ImportOptions {
  /**
   * `'replace'`: the space ends up holding exactly the dump's entries (keys the dump lacks are
   * deleted). `'merge'`: the dump's entries are set, and nothing else changes.
   */
  mode: 'replace' | 'merge';
  /**
   * The space the dump's header must name, when it names one (a dump made by hand may not).
   * Default: the space imported into, so that a dump of another space, likelier a wrong file
   * than a wanted copy, is refused; name its space here to copy it (a seed into many spaces).
   */
  from?: string;
  /**
   * Takes a format-1 dump (viewsync 0.1), which has no end line: one cut short looks whole, and a
   * replace would delete every entry after the cut. Only for a dump known to be whole. Default: false.
   */
  allowFormat1?: boolean;
  /**
   * Whether the dump's client groups (format 3) are imported, so that their clients go on where
   * they were: the next mutation of each is the one after its lastMutationID, and none at or below
   * it runs again. False for a seed or a template, whose clients are not the target's: their lines
   * are still checked. Default: true.
   */
  clients?: boolean;
  /**
   * Import the dump's history too (a format-4 dump: `exportSpace`'s `history: true`), so that
   * `at` and `readHistory` answer in this space as in the one exported, for every version the
   * dump's history keeps: the space must be new (no write ever reached it), and ends at the
   * dump's version or later. Without it, a dump's history is checked and counted, and the rest
   * imported as from a dump without one. Default: false.
   */
  history?: boolean;
  /** Told how far the import got, about once per thousand entries: for a progress line. */
  onProgress?: (progress: ImportProgress) => void;
}

/** How far an import got. */
export interface ImportProgress {
  /** `'reading'`: the dump is being read and checked; `'applying'`: it is being written to the space. */
  phase: 'reading' | 'applying';
  /** Entries read from the dump so far. */
  entries: number;
  /** Entries written or deleted in the space so far. */
  applied: number;
}

/** What an import did. */
export interface ImportResult {
  /** Entries in the dump. */
  entries: number;
  /** Entries written: new ones and changed ones. Entries the space already held as in the dump are left alone. */
  written: number;
  /** Entries deleted because the dump lacks them (`'replace'` only). */
  deleted: number;
  /** Client groups in the dump (none in a format-2 dump). */
  groups: number;
  /** Rows of the change log in the dump (a format-4 dump's history), imported with `history`. */
  changes?: number;
  /**
   * Client records written: new ones, and those whose lastMutationID the dump raised. A
   * lastMutationID is never lowered: where the space holds a higher one, it stays.
   */
  clients: number;
  /**
   * The dump's client records that were not written, and why: a client the space has in another
   * group (it stays there), or whose group the space expired (its clients start over).
   */
  skipped: SkippedClient[];
}

export type { SkippedClient };

/**
 * Reads a dump made by {@link exportSpace} (or by hand: see dump.ts) from `source`, a stream or
 * async iterable of bytes or strings cut anywhere, and brings `space` to it.
 *
 * It works in two phases. First the whole dump is read, checked line by line (JSON, the header's
 * format and space, keys in ascending order, the key and value limits, the client groups' IDs,
 * lastMutationIDs and order, the end line and its counts) and written to staging areas of the
 * space, a batch per transaction, in bounded memory. A bad line, or a dump that stops before its
 * end line (an export that failed midway), rejects with a {@link DumpError} naming the line, the
 * staging areas are removed, and the space is as it was. Then the staged entries are applied in
 * batches of a thousand keys, each a transaction queued with the space's pushes, taking a new
 * version like a push, so clients at any cookie get a correct patch; then the client groups (a
 * format-3 dump's), each client written as a push writes it, so that its next push and pull go on
 * from its lastMutationID (see `applyGroups` for what the space keeps where it knows more). A
 * merge of up to a thousand entries and clients is one transaction, and so is a replace when the
 * dump and the space each hold up to a thousand entries; a larger import is not atomic: a pull
 * during the apply may see part of it, and a crash midway leaves part of it applied (run it
 * again). Run one import of a space at a time, and within a day: housekeeping removes a staging
 * area a day after its import began, and an import whose area it took rejects with
 * `StagingLostError` before applying anything more.
 *
 * @example
 * // A seed: a file in the dump format, made by hand (no "space" in its header) or exported from
 * // 'template', whose clients are not acme's.
 * await importSpace(ctx, 'acme', Readable.toWeb(createReadStream('seed.ndjson')), { mode: 'replace', from: 'template', clients: false });
 */
export async function importSpace(ctx: SyncContext, space: string, source: DumpSource, options: ImportOptions): Promise<ImportResult> {
  checkContext(ctx);
  checkSpace(space);
  if (options?.mode !== 'replace' && options?.mode !== 'merge')
    throw new TypeError(`importSpace: options.mode must be 'replace' or 'merge', got ${JSON.stringify(options?.mode)}`);
  if (options.from !== undefined) checkSpace(options.from);
  const rules: HeaderRules = {
    target: space,
    from: options.from,
    allowFormat1: options.allowFormat1 === true,
    mode: options.mode,
    history: options.history === true,
  };
  const keys = new SpaceKeys(space);
  if (rules.history) await ctx.storage.transaction((tx) => checkNew(tx, keys, space), { readOnly: true, space });
  const limits = ctx.limits;
  const id = stagingID(ctx.clock());
  const progress = (phase: ImportProgress['phase'], entries: number, applied: number) => options.onProgress?.({ phase, entries, applied });
  let read: { entries: number; groups: number; changes: number; history?: { from: number; to: number } };
  try {
    read = await readDump(ctx, space, id, source, limits, rules, options.clients !== false, (count) => progress('reading', count, 0));
  } catch (error) {
    await drop(ctx, space, id);
    throw error;
  }
  const { history, changes, ...counts } = read;
  const result: ImportResult = { ...counts, ...(history !== undefined && { changes }), written: 0, deleted: 0, clients: 0, skipped: [] };
  try {
    // The history first, while the import's mark keeps its staged rows: then the entries, which leave the log.
    let bytes = 0;
    if (rules.history) {
      for (let done = false; !done; ) {
        const moved = await ctx.storage.transaction(
          async (tx) => (await checkStaging(tx, space, id), await checkNew(tx, keys, space), moveLog(tx, keys, id, BATCH)),
          { readOnly: false, space },
        );
        bytes += moved.bytes;
        done = moved.done;
      }
    }
    const session = { ...ctx.session, ...(rules.history && { leaveLog: true }) };
    let at: ApplyAt = { after: undefined, entriesDone: false };
    for (let done = false; !done; ) {
      const clock = { now: ctx.clock(), touchEveryMs: ctx.touchEveryMs };
      const step = await runBatched(ctx.storage, space, async (tx) => ({
        result: await applyStep(tx, space, id, at, { replace: options.mode === 'replace', limit: BATCH, clock, session }),
        keep: true,
      }));
      done = step.done;
      at = { after: step.after, entriesDone: step.entriesDone };
      result.written += step.written;
      result.deleted += step.deleted;
      result.clients += step.clients;
      result.skipped.push(...step.skipped);
      if (step.changed) afterChange(ctx, space, { operation: 'importSpace', space });
      progress('applying', read.entries, result.written + result.deleted);
    }
    if (history !== undefined && !(await ctx.storage.transaction((tx) => markHistory(tx, keys, history, bytes), { readOnly: false, space }))) {
      throw new Error(
        `importSpace: space ${JSON.stringify(space)} was written while its history was imported (or the dump holds no entry or client group to make it with): its data is imported, its history is not whole (import it again into a new space)`,
      );
    }
  } catch (error) {
    await drop(ctx, space, id).catch(() => {});
    throw error;
  }
  return result;
}

/** Reads and checks the dump into import `id`'s staging areas (its client groups only when `withClients`); resolves to what it holds. */
async function readDump(
  ctx: SyncContext,
  space: string,
  id: string,
  source: DumpSource,
  limits: Limits,
  rules: HeaderRules,
  withClients: boolean,
  told: (entries: number) => void,
): Promise<{ entries: number; groups: number; changes: number; history?: { from: number; to: number } }> {
  let format: number | undefined;
  const keys = new SpaceKeys(space);
  /** The versions a format-4 dump's history keeps, its log rows read so far and the last one's place. */
  let history: { from: number; to: number } | undefined;
  let changes = 0;
  let place: string | undefined;
  let log: DumpedLogRow[] = [];
  /** The end line's number, once read. */
  let end: number | undefined;
  /** The last line that is not blank. */
  let last = 0;
  let previous: string | undefined;
  let count = 0;
  const section = new GroupSection(limits);
  let batch: Array<readonly [string, JSONValue]> = [];
  let groups: GroupLine[] = [];
  let bytes = 0;
  let claimed = false;
  const flush = async () => {
    const [entries, lines, rows] = [batch, groups, log];
    [batch, groups, log, bytes] = [[], [], [], 0];
    await ctx.storage.transaction(
      async (tx) => {
        // The mark with the first batch; each later one checks it, so an import whose staged rows
        // housekeeping began to remove stops reading at once (see StagingLostError).
        await (claimed ? checkStaging : claimStaging)(tx, space, id);
        await stage(tx, space, id, entries);
        await stageGroups(tx, space, id, lines);
        await stageLog(tx, keys, id, rows);
      },
      { readOnly: false, space },
    );
    claimed = true;
    told(count);
  };
  for await (const { text, number } of lines(source, longestLine(limits))) {
    if (text.trim() === '') continue;
    last = number;
    if (end !== undefined)
      throw new DumpError(number, `comes after the dump's end line (line ${end}): a dump ends there (were two dumps joined?), so nothing was imported`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new DumpError(number, `is not JSON (${(error as Error).message})`);
    }
    if (format === undefined) {
      ({ format, history } = checkHeader(parsed, number, rules));
      continue;
    }
    if (format > 1 && isEndLine(parsed)) {
      checkEnd(parsed, number, format, { entries: count, groups: section.groups, changes });
      end = number;
      continue;
    }
    if (history !== undefined && isLogLine(parsed)) {
      const row = checkLogRow(parsed, keys, history, place, limits);
      if (typeof row === 'string') throw new DumpError(number, row);
      place = row[0];
      changes++;
      if (rules.history) log.push(row);
    } else if (changes > 0) {
      throw new DumpError(number, 'comes after the rows of the change log: a dump lists its entries, then its client groups, then its history');
    } else if (format >= DUMP_FORMAT && isGroupLine(parsed)) {
      const line = section.read(parsed, number);
      if (withClients) groups.push(line);
    } else {
      const [key, value] = checkEntry(parsed, number, limits);
      if (section.groups > 0) throw new DumpError(number, 'is an entry after the client groups: a dump lists its entries first, then its client groups');
      if (previous !== undefined && compareUTF8(previous, key) >= 0) {
        throw new DumpError(
          number,
          `has key ${quote(key)}, which is not after the previous line's ${quote(previous)}: a dump lists each key once, in ascending order (UTF-8 bytes)`,
        );
      }
      previous = key;
      count++;
      batch.push([key, value]);
    }
    bytes += text.length;
    if (batch.length + groups.length + log.length >= BATCH || bytes >= BATCH_CHARS) await flush();
  }
  if (format === undefined) throw new DumpError(1, 'is missing: a dump starts with its header line, and this one is empty');
  // What every cut of an export comes to: the lines before the cut are whole, the end is not there.
  if (format > 1 && end === undefined) throw missingEnd(last);
  // A dump with no entries is staged too: its mark is what lets a replace empty the space.
  if (batch.length + groups.length + log.length > 0 || !claimed) await flush();
  return { entries: count, groups: section.groups, changes, ...(rules.history && history !== undefined && { history }) };
}

function checkEntry(parsed: unknown, line: number, limits: Limits): [string, JSONValue] {
  const entry = parsed as { key?: unknown; value?: unknown } | null;
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry) || Object.keys(entry).length !== 2 || !('key' in entry) || !('value' in entry)) {
    throw new DumpError(line, 'is not an entry: it should be an object with exactly "key" and "value"');
  }
  const { key, value } = entry;
  if (typeof key !== 'string') throw new DumpError(line, `has a key that is not a string (${typeof key})`);
  if (hasLoneSurrogate(key)) throw new DumpError(line, `has key ${quote(key)}, which holds a lone surrogate (no UTF-8 form)`);
  if (!fitsUTF8(key, limits.keyBytes)) throw new DumpError(line, `has a key longer than ${limits.keyBytes} bytes (limits.keyBytes)`);
  try {
    return [key, frozenJSONCopy(value, limits.valueBytes)];
  } catch (error) {
    throw new DumpError(line, `has a value that cannot be stored: ${(error as Error).message}`);
  }
}

/** Refuses to import a history into a space a write reached: its own history would not be the dump's. */
async function checkNew(tx: StorageTransaction, keys: SpaceKeys, space: string): Promise<void> {
  if ((await tx.get(keys.meta)) !== undefined)
    throw new TypeError(
      `importSpace: a dump's history (options.history) goes into a new space only, and space ${JSON.stringify(space)} was written to: import it into a new space, or import without its history`,
    );
}

/** Removes import `id`'s staging area, a batch per transaction. */
async function drop(ctx: SyncContext, space: string, id: string): Promise<void> {
  while (!(await ctx.storage.transaction((tx) => unstage(tx, space, id, BATCH), { readOnly: false, space })));
}

function quote(key: string): string {
  return JSON.stringify(key.length > 100 ? `${key.slice(0, 100)}…` : key);
}

/** Keys per transaction, staging and applying: a transaction stays small, and quick for the pushes queued behind it. */
const BATCH = 1_000;
/** At most this many characters of lines per staging transaction, for large values. */
const BATCH_CHARS = 8 * 1024 * 1024;
