import { readFileSync } from 'node:fs';
import { fitStreamsToDescriptors } from '../src/poke/hub.js';

/**
 * Sizes the default `pokes.maxStreams` to this process's file-descriptor limit, read once from
 * `/proc/self/limits` (Linux; elsewhere the default stays). Each poke stream holds a socket: past
 * the limit, every accept and every database connection fails, not only new streams.
 */
export function fitStreamsToProcess(): void {
  if (read) return;
  read = true;
  try {
    const limit = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    fitStreamsToDescriptors(limit === undefined ? undefined : Number(limit));
  } catch {
    // No /proc (macOS, Windows) or no permission to read it (Deno without --allow-read).
  }
}

let read = false;
