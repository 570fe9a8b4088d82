import type { SyncContext } from '../context/context.js';
import { exportPages } from '../sync/export-pages.js';
import { checkSpace } from './transact.js';
import { endLine, headerLine } from './dump.js';

/** Options for {@link exportSpace}. */
export interface ExportOptions {
  /**
   * How long the stream may wait for its reader to ask for more before it fails, in
   * milliseconds. The export reads one snapshot, which on some stores holds the space's commits
   * back (see {@link exportSpace}), so a reader that stops reading must not hold them for ever.
   * Default: 30,000.
   */
  idleMs?: number;
}

/**
 * The live entries of `space` as a stream of NDJSON lines (UTF-8): a header line with the
 * format's version, then one line per entry in key order, then an end line with their count (see
 * dump.ts), read from one consistent snapshot a page at a time, as fast as the reader takes them,
 * so memory stays bounded for a space of any size. The snapshot is taken at the first read, not
 * when this is called. The end line comes only once every entry has been read: a stream that
 * fails or is cancelled before has none, and an import refuses what it wrote.
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
  checkSpace(space);
  const idleMs = options.idleMs ?? 30_000;
  const encoder = new TextEncoder();
  let started = false;
  let demand: (() => void) | undefined;
  let cancelled = false;
  let controller!: ReadableStreamDefaultController<Uint8Array>;

  /** Resolves once the reader wants more; rejects when it has not for `idleMs`. */
  const wanted = () =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new ReaderIdleError(`exportSpace: the reader asked for nothing for ${idleMs} ms; the export was stopped (options.idleMs)`)), idleMs);
      demand = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  /** Writes the header and the entries; resolves to how many entries, or undefined once cancelled. */
  const run = () =>
    ctx.storage.transaction(async (tx) => {
      let entries = 0;
      controller.enqueue(encoder.encode(headerLine(space, (ctx.clock ?? Date.now)())));
      const pages = exportPages(tx, space);
      for await (const page of pages) {
        if (cancelled) return void (await pages.return(undefined));
        entries += page.entries;
        controller.enqueue(encoder.encode(page.text));
        if ((controller.desiredSize ?? 1) <= 0) await wanted();
      }
      return entries;
    }, { readOnly: true, space });

  return new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      pull() {
        if (started) return void demand?.();
        started = true;
        run().then(
          (entries) => {
            if (cancelled || entries === undefined) return;
            // Only once the snapshot was read to its end: a stream that failed before has no end line.
            controller.enqueue(encoder.encode(endLine(entries)));
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
