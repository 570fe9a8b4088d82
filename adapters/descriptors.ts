import { readFileSync } from 'node:fs';
import type { SyncContext } from '../src/index.js';

/**
 * Sizes `ctx`'s poke stream cap (unless its `pokes.maxStreams` names one) to this process's
 * file-descriptor limit, read once from `/proc/self/limits` (Linux; elsewhere the default stays).
 * Each poke stream holds a socket: past the limit, every accept and every database connection
 * fails, not only new streams.
 */
export function fitStreamsToProcess(ctx: SyncContext): void {
  ctx.hub?.fitToDescriptors(descriptorLimit());
}

/** The process's open-file limit, read once (undefined where it cannot be read). */
function descriptorLimit(): number | undefined {
  if (read) return limit;
  read = true;
  try {
    const found = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    limit = found === undefined ? undefined : Number(found);
  } catch {
    // No /proc (macOS, Windows) or no permission to read it (Deno without --allow-read).
  }
  return limit;
}

let read = false;
let limit: number | undefined;
