/**
 * The public API speaks one language for time: every duration is in milliseconds and its name
 * ends in `Ms`, in every runtime's adapter; a space is an argument. Options that 0.2 renamed fail
 * loudly instead of being ignored.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeServerOptions } from '../../adapters/node.js';
import { serve as serveBun } from '../../adapters/bun.js';
import { handleRequest, memoryStorage, type SyncContext, createContext } from '../../src/index.js';
import { collectGarbage } from '../../src/ops.js';
import { ROOT } from './packed.js';

const ctx: SyncContext = createContext({ storage: memoryStorage(), mutators: {}, onError: () => {} });

describe('durations', () => {
  it('every numeric property documented in milliseconds or seconds in the published types ends in Ms', () => {
    const dist = join(ROOT, 'dist');
    const misnamed: string[] = [];
    for (const file of readdirSync(dist).filter((name) => name.endsWith('.d.ts'))) {
      const text = readFileSync(join(dist, file), 'utf8');
      for (const [, doc, name, type] of text.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*(?:readonly\s+)?(\w+)\??:\s*([^;]+);/g)) {
        if (/\b(milli)?seconds\b(?! since the epoch)/i.test(doc!) && /^number\b/.test(type!) && !name!.endsWith('Ms')) misnamed.push(`${file}: ${name}`);
      }
    }
    expect(misnamed).toEqual([]);
  });

  it('names that 0.2 renamed throw, saying the new name, instead of falling back to a default', async () => {
    const old = (options: object) => options as never;
    expect(() => nodeServerOptions(old({ idleTimeout: 1000 }))).toThrow('options.idleTimeout was renamed options.idleTimeoutMs in viewsync 0.2');
    await expect(serveBun(ctx, old({ idleTimeout: 30 }))).rejects.toThrow('options.idleTimeout was renamed options.idleTimeoutMs');
    await expect(serveBun(ctx, { idleTimeoutMs: 300_000 })).rejects.toThrow(RangeError);
    expect(() => createContext({ ...ctx.options, retention: old({ clientGroups: 1000 }) })).toThrow(
      'retention.clientGroups was renamed retention.clientGroupsMs',
    );
    await expect(collectGarbage(ctx, old({ space: 'a' }))).rejects.toThrow('collectGarbage(ctx, space, options) takes the space as its second argument');
    // At startup, not as a 500 at the first preflight.
    expect(() => createContext({ ...ctx.options, cors: old({ origin: '*', maxAge: 600 }) })).toThrow('cors.maxAge was renamed cors.maxAgeMs');
  });

  it('nodeServerOptions and the CORS preflight take milliseconds', async () => {
    expect(nodeServerOptions({ idleTimeoutMs: 1_500, requestTimeoutMs: 2_000, headersTimeoutMs: 1_000, keepAliveTimeoutMs: 500 })).toMatchObject({
      timeout: 1_500,
      requestTimeout: 2_000,
      headersTimeout: 1_000,
      keepAliveTimeout: 500,
    });
    const preflight = () =>
      new Request('http://localhost/pull', { method: 'OPTIONS', headers: { origin: 'http://app.test', 'access-control-request-method': 'POST' } });
    expect((await handleRequest(preflight(), ctx)).headers.get('access-control-max-age')).toBe('86400');
    expect(
      (await handleRequest(preflight(), createContext({ ...ctx.options, cors: { origin: '*', maxAgeMs: 600_000 } }))).headers.get('access-control-max-age'),
    ).toBe('600');
  });
});

describe('the space', () => {
  it("is collectGarbage's second argument, as in every backend call", async () => {
    const clock = { now: 0 };
    const timed = createContext({ ...ctx.options, clock: () => clock.now, retention: { clientGroupsMs: 1, tombstonesMs: 1 } });
    expect(await collectGarbage(timed, 'a', { batch: 8 })).toEqual({ clientGroups: 0, clients: 0, tombstones: 0, views: 0, changes: 0 });
  });
});
