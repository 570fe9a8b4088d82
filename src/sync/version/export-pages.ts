import type { StorageTransaction } from '../../storage/types.js';
import { scanText } from '../../storage/write-buffer.js';
import { SpaceKeys } from './keys.js';
import { entryValueText, pagesOf } from './patch.js';

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
      const value = entryValueText(stored);
      if (value === undefined) continue;
      text += `{"key":${JSON.stringify(row.slice(skip))},"value":${value}}\n`;
      entries++;
    }
    if (entries > 0) yield { text, entries };
  }
}
