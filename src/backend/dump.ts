import { compareUTF8 } from '../base/utf8.js';
import type { DumpedGroup } from '../sync/dumps/dumped-groups.js';
import type { Limits } from '../sync/transactions/limits.js';
import { DumpError } from './lines.js';

/**
 * The dump format of `exportSpace` and `importSpace`, format 3: NDJSON, UTF-8. The first line is
 * a header, `{"viewsync":"space","format":3,"space":…,"exported":…,"version":…}`. Each line after it is one
 * live entry, `{"key":…,"value":…}`, in strictly ascending key order (UTF-8 byte order, as keys
 * sort everywhere in viewsync), which lets an import replace a space of any size in one pass.
 *
 * Then come the space's client groups, read from the same snapshot as the entries (a
 * lastMutationID is good only with the data it was read with), so that an import lets their
 * clients go on where they were: a group with its user (null: anonymous requests) and its
 * clients' lastMutationIDs, `{"group":…,"user":…,"clients":{"<clientID>":<lastMutationID>,…}}`,
 * or a group housekeeping expired, `{"group":…,"user":…,"expired":true}`, whose clients then
 * get ClientStateNotFound on the target too. Groups come in the order of the store's keys for
 * them, each once: the UTF-8 byte order of `-/<group>` (anonymous) or `u<user>/<group>`, with `%`
 * and `/` in the IDs escaped as `%25` and `%2F` (`groupOrder`). A group whose clients outgrow a
 * line of {@link GROUP_LINE_CHARS} takes several consecutive lines, each line's clients all
 * after the previous line's (client IDs in UTF-8 byte order).
 *
 * The last line is the end line, `{"viewsync":"end","entries":…,"groups":…}`, with the number of
 * entries and of client groups. It is written only once the export has read the whole space, so
 * a dump cut short anywhere (an export that failed or was killed midway, a full disk) lacks it,
 * and an import refuses it: without it, a replace would delete every entry after the cut, and
 * clients past the cut would lose their pending mutations. Its counts also catch lines lost or
 * added in between. A checksum would catch more (a value changed in place), but no export
 * writes such a dump, and a seed written by hand would need one too.
 *
 * Format 4, written only when asked for (`exportSpace(…, { history: true })`), is format 3 with the
 * space's history: its header says which versions the history keeps, `"history":{"from":F}` (every
 * version from F to the header's `version`), and after the client groups come the rows of the
 * change log, one per line in log order, each with its place, `{"log":[version,seq],…}`, and the
 * row as stored (its key, values before and after, time and origin, or an event; an erased row
 * stays erased); its end line counts them too, `"changes":…`. An import that asks for the history
 * (`importSpace(…, { history: true })`) takes them; one that does not checks and counts them, and
 * imports the rest as from a format-3 dump.
 *
 * Format 2, written before client groups were dumped, is the same without them (and without
 * `groups` in its end line): it is read as it always was. Format 1, written by viewsync 0.1, is
 * format 2 without the end line, so a whole one cannot be told from a cut one: an import reads it
 * only when told to (`allowFormat1`).
 */
export const DUMP_KIND = 'space';

/** The `viewsync` of a dump's last line. */
export const DUMP_END = 'end';

/** The format this viewsync writes. */
export const DUMP_FORMAT = 3;

/** Format 3 with the space's history: written and read only when asked for. */
export const HISTORY_FORMAT = 4;

/** The format before client groups, read as it always was. */
export const FORMAT_WITHOUT_GROUPS = 2;

/** The format before the end line, read only with `allowFormat1`. */
export const FORMAT_WITHOUT_END = 1;

/** A dump's first line. */
export interface DumpHeader {
  viewsync: typeof DUMP_KIND;
  format: typeof DUMP_FORMAT;
  /** The space it was exported from; a dump made by hand may leave it out, and then goes into any space. */
  space?: string;
  /** When the export's snapshot was taken, as an ISO date. */
  exported?: string;
  /** The space's version in the export's snapshot: the change feed's cursor to follow the dump with (`readChanges`); with its history, the last version it keeps. */
  version?: number;
  /** Format 4: the first version the dump's history keeps (the log holds every change after it, up to `version`). */
  history?: { from: number };
}

/** A dump's last line. */
export interface DumpEnd {
  viewsync: typeof DUMP_END;
  /** How many entry lines came before it. */
  entries: number;
  /** How many client groups came before it (a group may take several lines). */
  groups: number;
  /** Format 4: how many rows of the change log came before it. */
  changes?: number;
}

/**
 * The longest line a group's clients fill before the rest go on the next line: far more than most
 * groups need, and small enough that an import holds any line of a dump in little memory.
 */
export const GROUP_LINE_CHARS = 65_536;

/** The header line, with its newline. */
export function headerLine(space: string, now: number, version: number, historyFrom?: number): string {
  const header: DumpHeader | (Omit<DumpHeader, 'format'> & { format: typeof HISTORY_FORMAT }) = {
    viewsync: DUMP_KIND,
    format: historyFrom === undefined ? DUMP_FORMAT : HISTORY_FORMAT,
    space,
    exported: new Date(now).toISOString(),
    version,
    ...(historyFrom !== undefined && { history: { from: historyFrom } }),
  };
  return JSON.stringify(header) + '\n';
}

/** A client group's lines, each with its newline: one, unless its clients outgrow {@link GROUP_LINE_CHARS}. */
export function groupLines(group: DumpedGroup): string {
  const head = `{"group":${JSON.stringify(group.group)},"user":${JSON.stringify(group.user)},`;
  if ('expired' in group) return `${head}"expired":true}\n`;
  // Sorted here: an object's own order puts IDs like "10" first, as numbers.
  const clients = Object.entries(group.clients)
    .sort(([a], [b]) => compareUTF8(a, b))
    .map(([id, lmid]) => `${JSON.stringify(id)}:${lmid}`);
  const lines: string[][] = [[]];
  let chars = 0;
  for (const client of clients) {
    if (lines.at(-1)!.length > 0 && head.length + chars + client.length + 16 > GROUP_LINE_CHARS) {
      lines.push([]);
      chars = 0;
    }
    lines.at(-1)!.push(client);
    chars += client.length + 1;
  }
  return lines.map((line) => `${head}"clients":{${line.join(',')}}}\n`).join('');
}

/** The end line, with its newline. */
export function endLine(entries: number, groups: number, changes?: number): string {
  const end: DumpEnd = { viewsync: DUMP_END, entries, groups, ...(changes !== undefined && { changes }) };
  return JSON.stringify(end) + '\n';
}

/** What an import is told about the dumps it may take. */
export interface HeaderRules {
  /** The space being imported into. */
  target: string;
  /** The space the header must name, when it names one (see `ImportOptions.from`). */
  from: string | undefined;
  /** Whether a format-1 dump, which has no end line, is taken. */
  allowFormat1: boolean;
  /** The import's mode, which says what taking a cut dump would do. */
  mode: 'replace' | 'merge';
  /** Whether the import takes the dump's history: only a format-4 dump has one. */
  history: boolean;
}

/** Checks line `line`, the dump's header; returns the dump's format (1 to 4), and for format 4 the versions its history keeps. */
export function checkHeader(parsed: unknown, line: number, rules: HeaderRules): { format: number; history?: { from: number; to: number } } {
  const header = parsed as { viewsync?: unknown; format?: unknown; space?: unknown; version?: unknown; history?: { from?: unknown } } | null;
  if (typeof header !== 'object' || header === null || Array.isArray(header) || header.viewsync !== DUMP_KIND) {
    throw new DumpError(line, `is not a viewsync dump's header: it should be an object with "viewsync": "${DUMP_KIND}"`);
  }
  if (header.format === FORMAT_WITHOUT_END && !rules.allowFormat1) {
    const risk = rules.mode === 'replace' ? 'a replace would delete every entry after the cut' : 'a merge would set only the entries before the cut';
    throw new DumpError(
      line,
      `is the header of a format-${FORMAT_WITHOUT_END} dump, which has no end line: if it was cut short (an export that failed midway), nothing shows it, and ${risk}. ` +
        `Export it again with this viewsync (format ${DUMP_FORMAT}), or, if you know the dump is whole, import it with allowFormat1: true (CLI: --allow-format-1)`,
    );
  }
  if (header.format !== HISTORY_FORMAT && header.format !== DUMP_FORMAT && header.format !== FORMAT_WITHOUT_GROUPS && header.format !== FORMAT_WITHOUT_END) {
    throw new DumpError(
      line,
      `is a header of dump format ${JSON.stringify(header.format)}; this viewsync reads formats ${HISTORY_FORMAT}, ${DUMP_FORMAT} and ${FORMAT_WITHOUT_GROUPS} (and ${FORMAT_WITHOUT_END}, with allowFormat1)`,
    );
  }
  let history: { from: number; to: number } | undefined;
  if (header.format === HISTORY_FORMAT) {
    const from = header.history?.from;
    if (!isCount(from) || !isCount(header.version) || from > header.version)
      throw new DumpError(
        line,
        `is a format-${HISTORY_FORMAT} header without the versions its history keeps: it should hold the dump's version N and a history whose first kept version F is at most N`,
      );
    history = { from, to: header.version };
  } else if (rules.history) {
    throw new DumpError(
      line,
      `is the header of a format-${JSON.stringify(header.format)} dump, which holds no history (importSpace's history: true, CLI --history): export the space with its history (format ${HISTORY_FORMAT}: exportSpace's history: true, viewsync export --history)`,
    );
  }
  if ('space' in header) {
    if (typeof header.space !== 'string') throw new DumpError(line, `is a header whose "space" is not a string (${JSON.stringify(header.space)})`);
    const expected = rules.from ?? rules.target;
    if (header.space !== expected) {
      // A dump of another space is as likely a wrong file as a wanted copy: the caller says which.
      const remedy =
        rules.from === undefined
          ? `: to import it into ${JSON.stringify(rules.target)} anyway, pass from: ${JSON.stringify(header.space)} (CLI: --from ${JSON.stringify(header.space)})`
          : ' (options.from)';
      throw new DumpError(line, `is the header of a dump of space ${JSON.stringify(header.space)}, not ${JSON.stringify(expected)}${remedy}`);
    }
  }
  return { format: header.format, ...(history !== undefined && { history }) };
}

/** Whether a parsed line is an end line (or an attempt at one): an entry never has `viewsync`. */
export function isEndLine(parsed: unknown): boolean {
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && (parsed as { viewsync?: unknown }).viewsync === DUMP_END;
}

/** Checks line `line`, the end line of a dump of `format`, against the entries and client groups read before it. */
export function checkEnd(parsed: unknown, line: number, format: number, read: { entries: number; groups: number; changes: number }): void {
  const end = parsed as { entries?: unknown; groups?: unknown; changes?: unknown };
  const shape =
    format === HISTORY_FORMAT
      ? `{"viewsync":"${DUMP_END}","entries":N,"groups":M,"changes":C}`
      : format === DUMP_FORMAT
        ? `{"viewsync":"${DUMP_END}","entries":N,"groups":M}`
        : `{"viewsync":"${DUMP_END}","entries":N}`;
  if (!isCount(end.entries)) throw new DumpError(line, `is an end line without a count of entries: it should be ${shape}`);
  if (end.entries !== read.entries) {
    throw new DumpError(
      line,
      `is the dump's end line, which counts ${end.entries} entries, but ${read.entries} came before it: lines were lost or added, so nothing was imported`,
    );
  }
  // Format 2 has no client groups; what else its end line holds was never read.
  if (format < DUMP_FORMAT) return;
  if (!isCount(end.groups)) throw new DumpError(line, `is an end line without a count of client groups: a format-${DUMP_FORMAT} dump's is ${shape}`);
  if (end.groups !== read.groups) {
    throw new DumpError(
      line,
      `is the dump's end line, which counts ${end.groups} client groups, but ${read.groups} came before it: lines were lost or added, so nothing was imported`,
    );
  }
  if (format !== HISTORY_FORMAT) return;
  if (!isCount(end.changes))
    throw new DumpError(line, `is an end line without a count of the change log's rows: a format-${HISTORY_FORMAT} dump's is ${shape}`);
  if (end.changes !== read.changes) {
    throw new DumpError(
      line,
      `is the dump's end line, which counts ${end.changes} rows of the change log, but ${read.changes} came before it: lines were lost or added, so nothing was imported`,
    );
  }
}

/** Whether a parsed line of a format-4 dump is a row of the change log (or an attempt at one): no entry or group has `log`. */
export function isLogLine(parsed: unknown): boolean {
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && 'log' in parsed;
}

/** The error for a dump whose last line, `line`, is not its end line. */
export function missingEnd(line: number): DumpError {
  return new DumpError(
    line,
    `is its last, and not its end line, {"viewsync":"${DUMP_END}","entries":…}: the dump was cut short (an export that failed or was stopped midway?), so nothing was imported`,
  );
}

/** Whether a parsed line of a format-3 dump is a client group's (or an attempt at one): an entry never has `group`. */
export function isGroupLine(parsed: unknown): boolean {
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && 'group' in parsed;
}

/**
 * The longest line an import must take: an entry within the key and value limits (a key escaped
 * at worst 6 characters per byte), or a group's line, {@link GROUP_LINE_CHARS} or one client
 * whose IDs are each as long as `limits.idBytes` allows.
 */
export function longestLine(limits: Limits): number {
  // A change log's row holds two values, and its origin (a revert's cause names IDs).
  return Math.max(6 * limits.keyBytes + 2 * limits.valueBytes + 6 * 4 * limits.idBytes + 1_024, GROUP_LINE_CHARS, 3 * 6 * limits.idBytes + 64);
}

/** Whether `value` is a count or a lastMutationID: a safe integer, 0 or more. */
export function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
