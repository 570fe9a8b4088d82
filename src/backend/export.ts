import { within } from '../base/within.js';
import type { SyncContext } from '../context/context.js';
import { exportGroups } from '../sync/dumps/dumped-groups.js';
import { exportPages } from '../sync/version/export-pages.js';
import { checkSpace } from './transact.js';
import { endLine, groupLines, headerLine } from './dump.js';
import { checkContext } from '../context/state.js';
import { SpaceKeys } from '../sync/version/keys.js';
import { checkKept } from '../sync/history/log-reads.js';
import { logLines } from '../sync/dumps/dumped-history.js';
import type { Meta } from '../sync/version/records.js';

/** Options for {@link exportSpace}. */
export interface ExportOptions {
  /**
   * How long the stream may wait for its reader to ask for more before it fails, in
   * milliseconds. The export reads one snapshot, which on some stores holds the space's commits
   * back (see {@link exportSpace}), so a reader that stops reading must not hold them for ever.
   * Default: 30,000.
   */
  idleMs?: number;
  /**
   * Export the space's history too: every row of its change log, after the client groups, in a
   * dump of format 4 (see dump.ts), which `importSpace` with `history: true` brings into a new
   * space so that it reads the same as of every kept version. An erased row stays erased. The
   * stream fails when the space keeps no history now (its log is not whole). Default: false, a
   * dump of format 3.
   */
  history?: boolean;
  /** Told how far the export got, once per page read: for a progress line. */
  onProgress?: (progress: ExportProgress) => void;
}

/** How far an export got: what it has handed its reader. */
export interface ExportProgress {
  entries: number;
  /** Client groups, which come after the entries. */
  groups: number;
  /** Rows of the change log, which come last (with `history`). */
  changes?: number;
}

/**
 * The live entries of `space` and its client groups as a stream of NDJSON lines (UTF-8): a
 * header line with the format's version, then one line per entry in key order, then each client
 * group with its clients' lastMutationIDs (or the marker of an expired one), then an end line
 * with their counts (see dump.ts), read from one consistent snapshot a page at a time, as fast as
 * the reader takes them, so memory stays bounded for a space of any size. The snapshot is taken
 * at the first read, not when this is called. The end line comes only once everything has been
 * read: a stream that fails or is cancelled before has none, and an import refuses what it wrote.
 *
 * On PostgreSQL the snapshot holds no lock. On the SQLite, memory and Durable Object stores it
 * holds back the space's commits until the stream ends (pushes wait, none fail): write to a file
 * or a fast pipe, and cancel a stream you stop reading.
 *
 * @example
 * // An admin route: the dump as a download.
 * return new Response(exportSpace(ctx, 'acme'), { headers: { 'content-type': 'application/x-ndjson' } });
 */
export function exportSpace(ctx: SyncContext, space: string, options: ExportOptions = {}): ReadableStream<Uint8Array> {
  checkContext(ctx);
  checkSpace(space);
  const idleMs = options.idleMs ?? 30_000;
  const encoder = new TextEncoder();
  let started = false;
  let demand: (() => void) | undefined;
  let cancelled = false;
  let controller!: ReadableStreamDefaultController<Uint8Array>;

  /** Resolves once the reader wants more; rejects when it has not for `idleMs`. */
  const wanted = () =>
    within(
      new Promise<void>((resolve) => (demand = resolve)),
      idleMs,
      () => new ReaderIdleError(`exportSpace: the reader asked for nothing for ${idleMs} ms; the export was stopped (options.idleMs)`),
    );

  /** Hands the reader `text`, and waits until it wants more; false once cancelled. */
  const send = async (text: string, counts: ExportProgress): Promise<boolean> => {
    if (cancelled) return false;
    controller.enqueue(encoder.encode(text));
    options.onProgress?.({ ...counts });
    if ((controller.desiredSize ?? 1) <= 0) await wanted();
    return true;
  };

  /** Writes the header, the entries and the client groups; resolves to how many of each, or undefined once cancelled. */
  const run = () =>
    ctx.storage.transaction(
      async (tx) => {
        const counts: ExportProgress = { entries: 0, groups: 0, ...(options.history === true && { changes: 0 }) };
        const keys = new SpaceKeys(space);
        const meta = (await tx.get(keys.meta)) as Meta | undefined;
        // The versions the dump's history keeps: the whole log's, as at() reads it.
        const kept = options.history === true ? checkKept(space, meta, meta?.version ?? 0) : undefined;
        controller.enqueue(encoder.encode(headerLine(space, ctx.clock(), meta?.version ?? 0, kept?.from)));
        const pages = exportPages(tx, space);
        for await (const page of pages) {
          counts.entries += page.entries;
          if (!(await send(page.text, counts))) return void (await pages.return(undefined));
        }
        // In the same snapshot as the entries: a client's lastMutationID goes with the data it saw.
        const groups = exportGroups(tx, space);
        for await (const page of groups) {
          counts.groups += page.length;
          if (!(await send(page.map(groupLines).join(''), counts))) return void (await groups.return(undefined));
        }
        if (counts.changes !== undefined) {
          const log = logLines(tx, keys);
          for await (const page of log) {
            counts.changes += page.rows;
            if (!(await send(page.text, counts))) return void (await log.return(undefined));
          }
        }
        return counts;
      },
      { readOnly: true, space },
    );

  return new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      pull() {
        if (started) return void demand?.();
        started = true;
        run().then(
          (counts) => {
            if (cancelled || counts === undefined) return;
            // Only once the snapshot was read to its end: a stream that failed before has no end line.
            controller.enqueue(encoder.encode(endLine(counts.entries, counts.groups, counts.changes)));
            controller.close();
          },
          (error: unknown) => cancelled || controller.error(error),
        );
      },
      cancel() {
        cancelled = true;
        demand?.();
      },
    },
    // Nothing read ahead: the snapshot starts at the first read, and a page is read when asked for.
    { highWaterMark: 0 },
  );
}

/** An export stopped because its reader took nothing for `idleMs`. */
export class ReaderIdleError extends Error {
  override name = 'ReaderIdleError';
}
