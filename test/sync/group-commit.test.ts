import { describe, expect, it } from 'vitest';
import { handlePush, memoryStorage, type Storage, TemporaryError } from '../../src/index.js';
import { mutation, post, pull, pushBody, serverView, testContext, testMutators } from '../support/helpers.js';

/** A memory store that counts its read-write transactions. */
function counting(): { storage: Storage; writes: () => number } {
  const inner = memoryStorage();
  let writes = 0;
  return { storage: { transaction: (fn, options) => (options.readOnly || writes++, inner.transaction(fn, options)) }, writes: () => writes };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('group commit: pushes to a space that queue behind a running one share its next transaction', () => {
  it('50 concurrent pushes to one space take a few transactions, and every increment lands once', async () => {
    const { storage, writes } = counting();
    const ctx = testContext({ storage, mutators: { ...testMutators, slowIncrement: async (tx, args: { key: string }) => {
      const n = ((await tx.get(args.key)) as number | undefined) ?? 0;
      await tick();
      await tx.set(args.key, n + 1);
    } } });
    const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => handlePush(post('/push', pushBody(`g${i}`, [mutation(`c${i}`, 1, 'slowIncrement', { key: 'n' })])), ctx)));
    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(await serverView(ctx)).toEqual(new Map([['n', 50]]));
    // The first push runs alone; the 49 that queued behind it run together.
    expect(writes()).toBe(2);
    for (let i = 0; i < 50; i++) expect((await pull(ctx, `g${i}`, null)).lastMutationIDChanges).toEqual({ [`c${i}`]: 1 });
  });

  it("in one transaction, each push keeps its own outcome: one push's 400, lost state or temporary error never touches another's writes", async () => {
    const { storage, writes } = counting();
    const ctx = testContext({ storage, mutators: { ...testMutators, gate: () => tick() } });
    await handlePush(post('/push', pushBody('taken', [mutation('shared', 1, 'put', { key: 'x', value: 0 })])), ctx);
    // The first push holds the space while the others queue, so the four share one transaction.
    const first = handlePush(post('/push', pushBody('g0', [mutation('c0', 1, 'gate')])), ctx);
    const [refused, lost, temporary, fine] = await Promise.all([
      handlePush(post('/push', pushBody('g1', [mutation('c1', 1, 'put', { key: 'refused', value: 1 }), mutation('shared', 2, 'put', { key: 'refused2', value: 1 })])), ctx),
      handlePush(post('/push', pushBody('g2', [mutation('c2', 1, 'put', { key: 'lost', value: 1 }), mutation('gone', 7, 'put', { key: 'lost2', value: 1 })])), ctx),
      handlePush(post('/push', pushBody('g3', [mutation('c3', 1, 'put', { key: 'kept', value: 1 }), mutation('c3', 2, 'putThenTemporary', { key: 'dropped', value: 1 })])), ctx),
      handlePush(post('/push', pushBody('g4', [mutation('c4', 1, 'put', { key: 'fine', value: 1 })])), ctx),
    ]);
    expect((await first).status).toBe(200);
    expect(refused.status).toBe(400);
    expect(await lost.json()).toEqual({ error: 'ClientStateNotFound' });
    expect(temporary.status).toBe(503);
    expect(fine.status).toBe(200);
    expect(writes()).toBe(3); // the setup push, the first, then the four together
    expect(await serverView(ctx)).toEqual(new Map([['x', 0], ['kept', 1], ['fine', 1]]));
    expect((await pull(ctx, 'g1', null)).lastMutationIDChanges).toEqual({});
    expect((await pull(ctx, 'g2', null)).lastMutationIDChanges).toEqual({});
    expect((await pull(ctx, 'g3', null)).lastMutationIDChanges).toEqual({ c3: 1 });
    expect((await pull(ctx, 'g4', null)).lastMutationIDChanges).toEqual({ c4: 1 });
  });

  it('a store that fails the shared transaction fails every push in it, and commits none', async () => {
    const inner = memoryStorage();
    let failing = false;
    const ctx = testContext({
      storage: { transaction: (fn, o) => inner.transaction(async (tx) => { const r = await fn(tx); if (failing && !o.readOnly) throw new Error('disk full'); return r; }, o) },
      mutators: { ...testMutators, gate: () => tick() },
    });
    const first = handlePush(post('/push', pushBody('g0', [mutation('c0', 1, 'gate')])), ctx);
    failing = true;
    const rest = await Promise.all([1, 2, 3].map((i) => handlePush(post('/push', pushBody(`g${i}`, [mutation(`c${i}`, 1, 'put', { key: `k${i}`, value: i })])), ctx)));
    expect((await first).status).toBe(500);
    expect(rest.map((r) => r.status)).toEqual([500, 500, 500]);
    failing = false;
    expect(await serverView(ctx)).toEqual(new Map());
  });

  it('spaces queue apart: a slow push in one space does not hold up another space', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const ctx = testContext({ space: (r) => new URL(r.url).searchParams.get('s') ?? '', mutators: { ...testMutators, wait: () => gate } });
    const slow = handlePush(post('/push?s=a', pushBody('g', [mutation('c', 1, 'wait')])), ctx);
    const other = await handlePush(post('/push?s=b', pushBody('g', [mutation('c', 1, 'put', { key: 'b', value: 1 })])), ctx);
    expect(other.status).toBe(200);
    release();
    expect((await slow).status).toBe(200);
  });

  it('a temporary error stops only its own push; the pushes grouped after it still run', async () => {
    const ctx = testContext({ mutators: { ...testMutators, gate: () => tick(), flaky: () => Promise.reject(new TemporaryError('later')) } });
    const first = handlePush(post('/push', pushBody('g0', [mutation('c0', 1, 'gate')])), ctx);
    const [flaky, after] = await Promise.all([
      handlePush(post('/push', pushBody('g1', [mutation('c1', 1, 'flaky')])), ctx),
      handlePush(post('/push', pushBody('g2', [mutation('c2', 1, 'put', { key: 'after', value: 1 })])), ctx),
    ]);
    await first;
    expect([flaky.status, after.status]).toEqual([503, 200]);
    expect(await serverView(ctx)).toEqual(new Map([['after', 1]]));
  });
});
