/** readHistory's `after`: a version the space's history keeps, or a HistoryGoneError. */
import { describe, expect, it } from 'vitest';
import { HistoryGoneError, readHistory, transact } from '../../src/backend.js';
import { testContext } from '../support/helpers.js';

describe('readHistory after a version', () => {
  it("reads on from a kept version, and refuses one past the space's (a reader of another history) as gone, never answering an empty page that goes back", async () => {
    const ctx = testContext({ changes: {} });
    await transact(ctx, 's', (tx) => tx.set('a', 1));
    await transact(ctx, 's', (tx) => tx.set('a', 2));
    expect(await readHistory(ctx, 's', { after: 1 })).toMatchObject({ changes: [{ version: 2, before: 1, after: 2 }], version: 2, more: false });
    expect(await readHistory(ctx, 's', { after: 2 })).toMatchObject({ changes: [], version: 2, more: false });
    await expect(readHistory(ctx, 's', { after: 3 })).rejects.toThrow(HistoryGoneError);
    await expect(readHistory(ctx, 's', { after: 3 })).rejects.toThrow(/Version 3 of space "s" is not kept: its history holds versions 0 to 2/);
  });
});
