import type { JSONValue } from '../protocol/json.js';
import type { StorageTransaction } from '../storage/types.js';
import { SpaceKeys } from './keys.js';
import { live, scanPages } from './patch.js';
import type { Entry } from './records.js';

/**
 * The live entries of `space` as dump lines (`{"key":…,"value":…}` and a newline each, in key
 * order), one string per page read. Where the store hands out its JSON text (`scanText`), a
 * value's text is copied as it is, not parsed and serialised again: the entry record is
 * `{"ver":…,"val":…}` as `JSON.stringify` wrote it, so the value is the text between.
 */
export async function* exportPages(tx: StorageTransaction, space: string): AsyncGenerator<string> {
  const keys = new SpaceKeys(space);
  const skip = keys.entryPrefix.length;
  if (tx.scanText === undefined) {
    for await (const page of scanPages(tx, { prefix: keys.entryPrefix })) {
      let text = '';
      for (const [key, value] of live(page, skip)) text += entryLine(key, value);
      yield text;
    }
    return;
  }
  let start: { key: string; exclusive: boolean } | undefined;
  for (;;) {
    const page = await tx.scanText({ prefix: keys.entryPrefix, start, limit: PAGE });
    let text = '';
    for (const [row, stored] of page) {
      const head = HEAD.exec(stored);
      if (head !== null && stored.endsWith('}')) {
        text += `{"key":${JSON.stringify(row.slice(skip))},"value":${stored.slice(head[0].length, -1)}}\n`;
        continue;
      }
      // Any other shape: a tombstone, or a record some other writer made.
      const entry = JSON.parse(stored) as Entry;
      if (!entry.del) text += entryLine(row.slice(skip), entry.val);
    }
    if (text !== '') yield text;
    if (page.length < PAGE) return;
    start = { key: page.at(-1)![0], exclusive: true };
  }
}

/** An entry's line, with its newline. */
export function entryLine(key: string, value: JSONValue): string {
  return `{"key":${JSON.stringify(key)},"value":${JSON.stringify(value)}}\n`;
}

/** How a live entry's record starts, as `#stamp` writes it (`{ver, val}`, in that order). */
const HEAD = /^\{"ver":\d+,"val":/;

const PAGE = 4_096;
