/**
 * A webhook's delivery records, kept in the space for replays, are bounded per webhook and space
 * however long the retention: a busy space's tenant cannot fill the store with them.
 */
import { describe, expect, it } from 'vitest';
import { createContext, memoryStorage } from '../../src/index.js';
import { transact } from '../../src/backend.js';
import { claimDelivery, type DeliveryState, finishDelivery, type HookRule } from '../../src/sync/feed/deliveries.js';
import { SpaceKeys } from '../../src/sync/version/keys.js';

const rule: HookRule = { name: 'hook', wants: () => true, maxBatch: 1, maxChars: 1_000_000, retryForMs: 60_000, leaseMs: 60_000, maxRecords: 5 };

describe('delivery records', () => {
  it('are kept for retention, at most maxRecords a webhook in a space: the oldest go first', async () => {
    const storage = memoryStorage();
    const ctx = createContext({ storage, mutators: {}, changes: {} });
    const keys = new SpaceKeys('s');
    for (let i = 0; i < 12; i++) {
      await transact(ctx, 's', (tx) => tx.set(`k${i}`, i));
      await storage.transaction(
        async (tx) => {
          const claim = await claimDelivery(tx, 's', rule, 'me', 1);
          if (claim.kind !== 'deliver') throw new Error(`nothing to deliver: ${claim.kind}`);
          // Retention for ever: only the bound trims.
          expect(await finishDelivery(tx, 's', rule, 'me', claim.batch, { ok: true }, 1, false)).toBe('delivered');
        },
        { readOnly: false, space: 's' },
      );
    }
    const [records, state] = await storage.transaction(
      async (tx) => [await tx.scan({ prefix: keys.deliveryLog('hook') }), (await tx.get(keys.delivery('hook'))) as unknown as DeliveryState],
      { readOnly: true, space: 's' },
    );
    expect(state).toMatchObject({ delivered: 12, records: 5 });
    expect(records.map(([, record]) => (record as { to: string }).to)).toEqual(['8', '9', '10', '11', '12']);
  });
});
