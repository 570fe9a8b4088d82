import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryStorage, type SyncContext, createContext } from '../../src/index.js';
import { exportSpace, importSpace } from '../../src/ops.js';
import { compareUTF8 } from '../../src/store.js';
import { groupOrder } from '../../src/sync/dumps/dumped-groups.js';
import { onEveryStore } from '../support/stores.js';
import { describeClientRecords } from './client-records.js';
import { text } from './suite.js';

onEveryStore('dumped_clients', describeClientRecords);

const RUNS = Number(process.env.FC_RUNS ?? 100);

describe('client groups in dumps, any of them', () => {
  it('importing any client groups into an empty store and exporting them gives them back, and so does a second store from that export', async () => {
    const id = fc.string({ maxLength: 4 });
    const group = fc.record({
      user: fc.option(fc.constantFrom('alice', 'bob', 'a/b', '%2F', ''), { nil: null }),
      group: id,
      clients: fc.option(fc.dictionary(id, fc.nat({ max: 1_000 }), { maxKeys: 4 }), { nil: undefined }),
    });
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(group, { selector: ({ user, group }) => groupOrder(user, group), maxLength: 8 }), async (groups) => {
        // In the dump's order; a client's ID names its group, as a client stays in one.
        const lines = groups
          .sort((a, b) => compareUTF8(groupOrder(a.user, a.group), groupOrder(b.user, b.group)))
          .map(({ user, group, clients }) => {
            const head = `{"group":${JSON.stringify(group)},"user":${JSON.stringify(user)},`;
            if (clients === undefined) return `${head}"expired":true}`;
            const named = Object.entries(clients).map(([client, lmid]) => [`${group}:${client}`, lmid] as const);
            return `${head}"clients":{${named
              .sort(([a], [b]) => compareUTF8(a, b))
              .map(([client, lmid]) => `${JSON.stringify(client)}:${lmid}`)
              .join(',')}}}`;
          });
        const dump = ['{"viewsync":"space","format":3}', ...lines, `{"viewsync":"end","entries":0,"groups":${lines.length}}`].join('\n') + '\n';
        const body = (exported: string) => exported.split('\n').slice(1).join('\n');
        const first: SyncContext = createContext({ storage: memoryStorage(), mutators: {}, onError: () => {} });
        await importSpace(first, '', [dump], { mode: 'replace' });
        const exported = await text(exportSpace(first, ''));
        expect(body(exported)).toBe(body(dump));
        const second: SyncContext = createContext({ storage: memoryStorage(), mutators: {}, onError: () => {} });
        await importSpace(second, '', [exported], { mode: 'replace' });
        expect(body(await text(exportSpace(second, '')))).toBe(body(dump));
      }),
      { numRuns: RUNS },
    );
  });
});
