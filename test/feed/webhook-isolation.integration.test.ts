/**
 * A receiver that hangs holds up no other webhook: in `startWebhooks` each webhook has slots of
 * its own, and in a round of `deliverWebhooks` each walks its spaces beside the others. While a
 * receiver fails, its webhook has one attempt in flight, not one per space; once it answers
 * again, it gets its backlog, in order per space. Real HTTP receivers, on the memory store; the
 * clock runs with real time, and the test moves it on past backoffs.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createContext, memoryStorage, type SyncContext } from '../../src/index.js';
import { deliverWebhooks, startWebhooks, transact } from '../../src/backend.js';
import { testMutators } from '../support/helpers.js';
import { type Receiver, startReceiver } from './receiver.js';

const SECRET = 'webhook-secret-of-thirty-two-characters';
const MINUTE = 60_000;
const SPACES = Array.from({ length: 24 }, (_, i) => `s${i}`);
/** Only catches a hang: a healthy webhook's 24 deliveries take well under a second here. */
const HANG = { timeout: 20_000 };
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function receiver(answer: Receiver['answer'] = 'ok'): Promise<Receiver> {
  const started = await startReceiver();
  started.answer = answer;
  cleanup.push(() => started.close());
  return started;
}

/** Two webhooks: `slow`, whose requests may wait a minute for an answer, and `fast`. */
function hooked(slow: Receiver, fast: Receiver): SyncContext & { time: { offset: number } } {
  const time = { offset: 0 };
  const hook = (at: Receiver) => ({ url: at.url, secret: SECRET, allowPrivateAddresses: true });
  const webhooks = { slow: { ...hook(slow), timeoutMs: MINUTE }, fast: hook(fast) };
  const ctx = createContext({
    storage: memoryStorage(),
    mutators: testMutators,
    clock: () => Date.now() + time.offset,
    onError: () => {},
    changes: { webhooks },
  });
  return Object.assign(ctx, { time });
}

/** Starts a runner that is stopped, its attempts in flight ended, when the test ends. */
function run(ctx: SyncContext, ...receivers: Receiver[]): void {
  const runner = startWebhooks(ctx, { sweepMs: MINUTE });
  cleanup.push(async () => {
    // Stopped first, so that no attempt starts once the stalled ones are let go.
    const stopped = runner.stop();
    for (const at of receivers) at.release();
    await stopped;
  });
}

const writeEach = (ctx: SyncContext, key: string) => Promise.all(SPACES.map((space) => transact(ctx, space, (tx) => tx.set(key, 1))));

/** A receiver that takes requests and never answers (`hang`, webhook `slow`), one that answers (`ok`, webhook `fast`), a runner if asked, and a write of `a` into each space. */
async function hangingBeside(options: { runner: boolean }) {
  const hang = await receiver('stall');
  const ok = await receiver();
  const ctx = hooked(hang, ok);
  if (options.runner) run(ctx, hang);
  await writeEach(ctx, 'a');
  return { hang, ok, ctx };
}

/** How many spaces' deliveries to `at` held `key`. */
const spacesHolding = (at: Receiver, key: string) =>
  new Set(
    at
      .delivered()
      .filter(({ delivery }) => delivery.changes.some((change) => change.op !== 'event' && change.key === key))
      .map(({ delivery }) => delivery.space),
  ).size;

/** The keys delivered to `at` in each space, each once, in the order they first came. */
function keysBySpace(at: Receiver): Record<string, string[]> {
  const keys: Record<string, string[]> = {};
  for (const { delivery } of at.delivered()) {
    const seen = (keys[delivery.space] ??= []);
    for (const change of delivery.changes) if (change.op !== 'event' && !seen.includes(change.key)) seen.push(change.key);
  }
  return keys;
}

const each = (keys: string[]) => Object.fromEntries(SPACES.map((space) => [space, keys]));

describe('webhooks: one receiver that hangs', () => {
  it('startWebhooks: holds up no other webhook; its attempts take its own slots, no more', async () => {
    const { hang, ok } = await hangingBeside({ runner: true });
    await expect.poll(() => spacesHolding(ok, 'a'), HANG).toBe(24);
    // The slow webhook's 8 slots (the default concurrency) hold attempts that hang; it starts no more.
    await expect.poll(() => hang.stalled(), HANG).toBe(8);
    expect(hang.received).toHaveLength(8);
  });

  it('startWebhooks: while its receiver fails, a webhook has one attempt in flight; once it answers, it gets its backlog in order per space', async () => {
    const { hang, ok, ctx } = await hangingBeside({ runner: true });
    await expect.poll(() => hang.stalled(), HANG).toBe(8);
    // The 8 attempts end with their connections and fail; the receiver still takes requests and never answers.
    hang.release();
    await expect.poll(() => hang.received.length, HANG).toBe(9);
    await writeEach(ctx, 'b');
    await expect.poll(() => spacesHolding(ok, 'b'), HANG).toBe(24);
    // Woken in every space by the writes, the failing webhook still has its one probe out, not an attempt per space.
    expect(hang.received).toHaveLength(9);
    expect(hang.stalled()).toBe(1);
    // It answers again: the probe in flight ends with its connection, the next one is delivered, and every space's backlog follows past its backoff.
    hang.answer = 'ok';
    hang.release();
    ctx.time.offset += 15 * MINUTE;
    await expect.poll(() => keysBySpace(hang), HANG).toEqual(each(['a', 'b']));
    await hang.verifyAll(SECRET);
  });

  it('deliverWebhooks: holds up no other webhook in a round, which leaves it after two failures in a row', async () => {
    const { hang, ok, ctx } = await hangingBeside({ runner: false });
    const round = deliverWebhooks(ctx);
    await expect.poll(() => spacesHolding(ok, 'a'), HANG).toBe(24);
    // Each webhook walks its spaces one at a time: the slow one is still at its first.
    await expect.poll(() => hang.stalled(), HANG).toBe(1);
    expect(hang.received).toHaveLength(1);
    // From now on it answers 500: the attempt in flight ends and fails, so does the next, and the round leaves its other 22 spaces to the next round.
    hang.answer = 'fail';
    hang.release();
    expect(await round).toEqual({ delivered: 24, failed: 2, disabled: 0 });
    expect(hang.received).toHaveLength(2);
    hang.answer = 'ok';
    ctx.time.offset += 15 * MINUTE;
    expect(await deliverWebhooks(ctx)).toEqual({ delivered: 24, failed: 0, disabled: 0 });
    expect(keysBySpace(hang)).toEqual(each(['a']));
    expect(keysBySpace(ok)).toEqual(each(['a']));
  });
});
