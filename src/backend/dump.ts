import { DumpError } from './lines.js';

/**
 * The dump format of `exportSpace` and `importSpace`, format 2: NDJSON, UTF-8. The first line is
 * a header, `{"viewsync":"space","format":2,"space":…,"exported":…}`; each line after it is one
 * live entry, `{"key":…,"value":…}`, in strictly ascending key order (UTF-8 byte order, as keys
 * sort everywhere in viewsync), which lets an import replace a space of any size in one pass;
 * the last line is the end line, `{"viewsync":"end","entries":…}`, with the number of entries.
 *
 * The end line is written only once the export has read the whole space, so a dump cut short
 * anywhere (an export that failed or was killed midway, a full disk) lacks it, and an import
 * refuses it: without it, a replace would delete every entry after the cut. Its count also
 * catches lines lost or added in between. A checksum would catch more (a value changed in
 * place), but no export writes such a dump, and a seed written by hand would need one too.
 *
 * Format 1, written by viewsync 0.1, is the same without the end line, so a whole one
 * cannot be told from a cut one: an import reads it only when told to (`allowFormat1`).
 */
export const DUMP_KIND = 'space';

/** The `viewsync` of a dump's last line. */
export const DUMP_END = 'end';

/** The format this viewsync writes. */
export const DUMP_FORMAT = 2;

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
}

/** A dump's last line. */
export interface DumpEnd {
  viewsync: typeof DUMP_END;
  /** How many entry lines came before it. */
  entries: number;
}

/** The header line, with its newline. */
export function headerLine(space: string, now: number): string {
  const header: DumpHeader = { viewsync: DUMP_KIND, format: DUMP_FORMAT, space, exported: new Date(now).toISOString() };
  return JSON.stringify(header) + '\n';
}

/** The end line, with its newline. */
export function endLine(entries: number): string {
  const end: DumpEnd = { viewsync: DUMP_END, entries };
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
}

/** Checks line `line`, the dump's header; returns whether the dump must close with an end line (format 2). */
export function checkHeader(parsed: unknown, line: number, rules: HeaderRules): { closed: boolean } {
  const header = parsed as { viewsync?: unknown; format?: unknown; space?: unknown } | null;
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
  if (header.format !== DUMP_FORMAT && header.format !== FORMAT_WITHOUT_END) {
    throw new DumpError(line, `is a header of dump format ${JSON.stringify(header.format)}; this viewsync reads format ${DUMP_FORMAT} (and ${FORMAT_WITHOUT_END}, with allowFormat1)`);
  }
  if ('space' in header) {
    if (typeof header.space !== 'string') throw new DumpError(line, `is a header whose "space" is not a string (${JSON.stringify(header.space)})`);
    const expected = rules.from ?? rules.target;
    if (header.space !== expected) {
      // A dump of another space is as likely a wrong file as a wanted copy: the caller says which.
      const remedy = rules.from === undefined ? `: to import it into ${JSON.stringify(rules.target)} anyway, pass from: ${JSON.stringify(header.space)} (CLI: --from ${JSON.stringify(header.space)})` : ' (options.from)';
      throw new DumpError(line, `is the header of a dump of space ${JSON.stringify(header.space)}, not ${JSON.stringify(expected)}${remedy}`);
    }
  }
  return { closed: header.format === DUMP_FORMAT };
}

/** Whether a parsed line is an end line (or an attempt at one): an entry never has `viewsync`. */
export function isEndLine(parsed: unknown): boolean {
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && (parsed as { viewsync?: unknown }).viewsync === DUMP_END;
}

/** Checks line `line`, the end line, against the `entries` read before it. */
export function checkEnd(parsed: unknown, line: number, entries: number): void {
  const claimed = (parsed as { entries?: unknown }).entries;
  if (typeof claimed !== 'number' || !Number.isSafeInteger(claimed) || claimed < 0) {
    throw new DumpError(line, `is an end line without a count of entries: it should be {"viewsync":"${DUMP_END}","entries":N}`);
  }
  if (claimed !== entries) {
    throw new DumpError(line, `is the dump's end line, which counts ${claimed} entries, but ${entries} came before it: lines were lost or added, so nothing was imported`);
  }
}

/** The error for a dump whose last line, `line`, is not its end line. */
export function missingEnd(line: number): DumpError {
  return new DumpError(
    line,
    `is its last, and not its end line, {"viewsync":"${DUMP_END}","entries":…}: the dump was cut short (an export that failed or was stopped midway?), so nothing was imported`,
  );
}
