import type { StorageTransaction } from '../storage/types.js';
import { scanText } from '../storage/write-buffer.js';
import { SpaceKeys } from './keys.js';
import { pagesOf } from './patch.js';
import type { Entry } from './records.js';

/**
 * The live entries of `space` as dump lines (`{"key":…,"value":…}` and a newline each, in key
 * order), one string per page read, with how many entries it holds (for the dump's end line).
 * Values are copied as JSON text: a store that keeps its values as text (`scanText`) hands the
 * entry record out as `JSON.stringify` wrote it, `{"ver":…,"val":…}`, and the value is the text
 * between, never parsed and serialised again.
 */
export async function* exportPages(tx: StorageTransaction, space: string): AsyncGenerator<{ text: string; entries: number }> {
  const keys = new SpaceKeys(space);
  const skip = keys.entryPrefix.length;
  for await (const page of pagesOf((options) => scanText(tx, options), { prefix: keys.entryPrefix })) {
    let text = '';
    let entries = 0;
    for (const [row, stored] of page) {
      const value = valueText(stored);
      if (value === undefined) continue;
      text += `{"key":${JSON.stringify(row.slice(skip))},"value":${value}}\n`;
      entries++;
    }
    if (entries > 0) yield { text, entries };
  }
}

/** The JSON text of the value in an entry record's text; undefined for a tombstone. */
function valueText(record: string): string | undefined {
  const head = HEAD.exec(record);
  if (head !== null && record.endsWith('}')) return record.slice(head[0].length, -1);
  // Any other shape: a tombstone, or a record some other writer made.
  const entry = JSON.parse(record) as Entry;
  return entry.del ? undefined : JSON.stringify(entry.val);
}

/** How a live entry's record starts, as `#stamp` writes it (`{ver, val}`, in that order). */
const HEAD = /^\{"ver":\d+,"val":/;
