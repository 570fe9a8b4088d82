import { afterEach, describe, expect, it, vi } from 'vitest';
import { handlePull, handlePush } from '../../src/index.js';
import { mutation, post, pullBodyV0, pushBody, testMutators } from '../support/helpers.js';
import { createContext, memoryStorage, type SyncOptions } from '../../src/index.js';

/** The latest time a test of this file set: each starts a minute past it. */
let latest = 0;

/** A context with the default onError, whose console.error lines are collected. */
function logged(overrides: Partial<SyncOptions> = {}) {
  // A full budget, whatever the tests before used (the budget is the process's, as the console):
  // a minute past the latest time any of them logged at.
  vi.useFakeTimers({ toFake: ['Date'] });
  latest = Math.max(Date.now(), latest) + 60_000;
  vi.setSystemTime(latest);
  const lines: string[] = [];
  vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(' ')));
  return { ctx: createContext({ storage: memoryStorage(), mutators: testMutators, ...overrides }), lines };
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('the default onError', () => {
  it('prints one line per rejected mutation, naming it, without a stack trace', async () => {
    const { ctx, lines } = logged();
    await handlePush(post('/push', pushBody('g', [mutation('c', 1, 'putThenFail', { key: 'a', value: 1 })])), ctx);
    expect(lines).toEqual(['[viewsync] mutation 1 of client "c" ("putThenFail") rejected: Error: permanent failure after a write']);
  });

  it('escapes what clients send, so no client can forge a log line (was: raw newlines in client IDs)', async () => {
    const { ctx, lines } = logged();
    const forged = 'c\n[viewsync] server compromised\u001b[31m';
    await handlePush(post('/push', pushBody('g', [mutation(forged, 1, 'nope\r\nforged', {})])), ctx);
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toMatch(/[\u0000-\u001f]/);
    expect(lines[0]).toBe(
      '[viewsync] mutation 1 of client "c\\u000a[viewsync] server compromised\\u001b[31m" ("nope\\u000d\\u000aforged") rejected: UnknownMutatorError: No mutator is named "nope\\r\\nforged"',
    );
  });

  it('prints a 5xx with its stack frames, but the message, which can quote input, escaped on its line', async () => {
    const { ctx, lines } = logged();
    await handlePull(post('/pull', pullBodyV0('lost\n    at forged (evil.js:1:1)', null, 3)), ctx);
    expect(lines).toHaveLength(1);
    const [first, ...frames] = lines[0]!.split('\n');
    expect(first).toMatch(/^\[viewsync\] POST "\/pull" failed: HTTPError: Client "lost\\n {4}at forged/);
    expect(frames).toEqual([]); // an HTTPError's stack is the server's own choice, not a bug
    vi.restoreAllMocks();

    const broken = logged({ storage: { transaction: () => Promise.reject(new Error('disk on fire\nsecond line')) } });
    await handlePull(post('/pull', pullBodyV0('c', null, 0)), broken.ctx);
    const [head, ...stack] = broken.lines[0]!.split('\n');
    expect(head).toBe('[viewsync] POST "/pull" failed: Error: disk on fire\\u000asecond line');
    expect(stack.length).toBeGreaterThan(0);
    expect(stack.every((line) => /^\s+at /.test(line))).toBe(true);
  });

  it('prints at most a burst and then a few lines a second, and says how many it left out (was: 100k failures, 2.2 s of logging)', async () => {
    const { ctx, lines } = logged({ limits: { mutationsPerPush: 100_000 } });
    const failing = Array.from({ length: 100_000 }, (_, i) => mutation('c', i + 1, 'putThenFail', { key: 'a', value: 1 }));
    // What logging them costs beside a server that logs nothing is measured by `npm run bench`
    // (bench/run.ts, section 5), not here: a time bound failed on a busy machine.
    expect((await handlePush(post('/push', pushBody('g', failing)), ctx)).status).toBe(200);
    expect(lines).toHaveLength(20);
    vi.advanceTimersByTime(1_000);
    await handlePush(post('/push', pushBody('g', [mutation('c', 100_001, 'putThenFail', { key: 'a', value: 1 })])), ctx);
    expect(lines).toHaveLength(21);
    expect(lines[20]).toMatch(/^\[viewsync\] \(99980 earlier failures not logged\) mutation 100001 /);
  });

  it('a clock set back does not silence it (was: a minute back, a minute of nothing logged)', async () => {
    const { ctx, lines } = logged();
    const fail = (id: number) => handlePush(post('/push', pushBody('g', [mutation('c', id, 'putThenFail', { key: 'a', value: 1 })])), ctx);
    await fail(1);
    vi.setSystemTime(Date.now() - 60_000);
    await fail(2);
    expect(lines).toHaveLength(2);
  });
});
