/**
 * The dump format of `exportSpace` and `importSpace`: NDJSON, UTF-8. The first line is a header,
 * `{"viewsync":"space","format":1,"space":…,"exported":…}`; each line after it is one live entry,
 * `{"key":…,"value":…}`, in strictly ascending key order (UTF-8 byte order, as keys sort
 * everywhere in viewsync), which lets an import replace a space of any size in one pass.
 */
export const DUMP_KIND = 'space';

/** The format this viewsync writes and the only one it reads. */
export const DUMP_FORMAT = 1;

/** A dump's first line. */
export interface DumpHeader {
  viewsync: typeof DUMP_KIND;
  format: typeof DUMP_FORMAT;
  /** The space it was exported from (an import may go into any space). */
  space: string;
  /** When the export's snapshot was taken, as an ISO date. */
  exported: string;
}

/** The header line, with its newline. */
export function headerLine(space: string, now: number): string {
  const header: DumpHeader = { viewsync: DUMP_KIND, format: DUMP_FORMAT, space, exported: new Date(now).toISOString() };
  return JSON.stringify(header) + '\n';
}
