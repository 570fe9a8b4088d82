/**
 * Where spaces live, in the inspector's spaces list over a routed storage: each space's store, and
 * a move in progress with its step and its copy's progress, read from the stores' route records
 * at each step of a real move (its progress callback holds it there while the list is read).
 */
import { describe, expect, it } from 'vitest';
import { handleRequest, memoryStorage } from '../../src/index.js';
import { moveSpace, routedStorage } from '../../src/ops.js';
import type { SpaceRow, SpacesPage } from '../../src/inspector/api-types.js';
import { inspectorApp, pushAs, SECRET } from './app.js';

const ORIGIN = 'http://inspect.test';

describe('the spaces list over a routed storage', () => {
  it("names each space's store, and shows a move in progress step by step, with the copy's progress", async () => {
    const storage = routedStorage({ stores: { a: memoryStorage(), b: memoryStorage() }, place: () => 'a' });
    const ctx = inspectorApp(storage);
    const handle = (request: Request) => handleRequest(request, ctx);
    await pushAs(
      handle,
      'acme',
      'ann',
      Array.from({ length: 50 }, (_, i) => ({ name: 'put' as const, args: { key: `k/${i}`, value: i } })),
    );
    await pushAs(handle, 'other', 'ann', [{ name: 'put', args: { key: 'x', value: 1 } }]);
    const login = await handle(
      new Request(`${ORIGIN}/_inspect/login`, {
        method: 'POST',
        headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
        body: `secret=${SECRET}`,
      }),
    );
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const row = async (space: string): Promise<SpaceRow> => {
      const page = (await (
        await handle(new Request(`${ORIGIN}/_inspect/api/spaces`, { headers: { cookie, 'x-viewsync-inspector': '1' } }))
      ).json()) as SpacesPage;
      return page.spaces.find((each) => each.space === space)!;
    };
    expect(await row('acme')).toMatchObject({ store: 'a', entries: 50 });
    expect((await row('acme')).move).toBeUndefined();
    // Read at the phases where the move holds no transaction open: on a memory store (one lock), a
    // read during the snapshot copy waits for it, and the move waits here for the read.
    const seen = new Map<string, SpaceRow>();
    await moveSpace(ctx, 'acme', 'b', {
      onProgress: async ({ phase }) =>
        void (['catching-up', 'switching', 'switched'].includes(phase) && !seen.has(phase) && seen.set(phase, await row('acme'))),
    });
    expect(seen.get('catching-up')).toMatchObject({ store: 'a', move: { from: 'a', to: 'b', step: 'copying', copied: 50, of: 50 } });
    expect(seen.get('switching')).toMatchObject({ store: 'a', move: { from: 'a', to: 'b', step: 'freezing' } });
    expect(seen.get('switched')).toMatchObject({ store: 'b', move: { from: 'a', to: 'b', step: 'promoting' } });
    expect(await row('acme')).toMatchObject({ store: 'b', entries: 50 });
    expect((await row('acme')).move).toBeUndefined();
    expect(await row('other')).toMatchObject({ store: 'a' });
  });
});
