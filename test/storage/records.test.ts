import { describe, expect, it } from 'vitest';
import { memoryStorage } from '../../src/storage/memory.js';
import { recordOf, toStored } from '../../src/storage/records.js';

interface Kept {
  at: number;
  name: string;
  erased?: boolean;
  parts: ReadonlyArray<{ key: string; value: string[] | null }>;
}

describe('records in a store', () => {
  it('a record written with toStored reads back, by recordOf, as it was', async () => {
    const storage = memoryStorage();
    const kept: Kept = { at: 1, name: 'a', parts: [{ key: 'k', value: null }] };
    await storage.transaction(
      async (tx) => {
        await tx.put('r/1', toStored(kept));
      },
      { readOnly: false },
    );
    const read = await storage.transaction(async (tx) => tx.get('r/1'), { readOnly: true });
    expect(recordOf<Kept>(read!)).toEqual(kept);
  });

  it('a record with a field that is not JSON does not typecheck (npm run typecheck)', () => {
    const records = [
      // @ts-expect-error a Date is not JSON
      () => toStored({ at: new Date() }),
      // @ts-expect-error a Map is not JSON
      () => toStored({ seen: new Map<string, number>() }),
      // @ts-expect-error a function is not JSON
      () => toStored({ run: () => 1 }),
      // @ts-expect-error a bigint is not JSON
      () => toStored({ n: 1n }),
    ];
    expect(records).toHaveLength(4);
  });
});
