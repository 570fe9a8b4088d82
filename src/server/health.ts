import type { Storage } from '../storage/types.js';
import { SpaceKeys } from '../sync/version/keys.js';
import { type SyncContext, reportError } from '../context/context.js';
import { isDraining } from '../context/drain.js';
import { json, type Reply } from '../base/reply.js';
import { checkContext } from '../context/state.js';
import { within } from '../base/within.js';

/** Options for {@link checkHealth}. */
export interface HealthOptions {
  /** Milliseconds the store has to answer a read before the check fails. Default: 2,000. */
  timeoutMs?: number;
}

/** What {@link checkHealth} found. */
export type Health =
  | { ok: true; status: 'ok'; storeMs: number; stores?: Record<string, StoreHealth> }
  | { ok: false; status: 'draining' }
  | { ok: false; status: 'store-unavailable'; reason: string };

/**
 * How each store of a routed storage answered: its time, or that it failed (the spaces it holds
 * fail; the others are served, so the server stays ready while any store answers).
 */
export type StoreHealth = { ok: true; storeMs: number } | { ok: false; reason: string };

/**
 * Whether this server should get traffic, for a load balancer's or an orchestrator's readiness
 * probe: not while it drains (see {@link drain}), nor when its store fails or does not answer a
 * read within `timeoutMs`. The read is one key in a read-only transaction, as cheap as the
 * smallest pull. `handleRequest` serves it as `GET …/health`: 200, else 503.
 *
 * @example
 * const health = await checkHealth(ctx);
 * if (!health.ok) console.warn(`not ready: ${health.status}`);
 */
export async function checkHealth(ctx: SyncContext, options: HealthOptions = {}): Promise<Health> {
  checkContext(ctx);
  if (isDraining(ctx)) return { ok: false, status: 'draining' };
  const timeoutMs = options.timeoutMs ?? 2_000;
  const started = performance.now();
  // Every store probed at once (a routed storage's too), each held to the same time.
  const probe = (storage: Storage) =>
    within(
      storage.transaction((tx) => tx.get(PROBE), { readOnly: true, space: '' }),
      timeoutMs,
      () => new Error(`the store did not answer within ${timeoutMs} ms`),
    );
  try {
    if (ctx.storage.parts) return await partsHealth(ctx.storage.parts.stores, probe);
    // The default space's meta record: a read every store answers the way a pull starts.
    await probe(ctx.storage);
    return { ok: true, status: 'ok', storeMs: Math.round(performance.now() - started) };
  } catch (error) {
    return { ok: false, status: 'store-unavailable', reason: error instanceof Error ? error.message : String(error) };
  }
}

/** Probes every part of a store made of several at once: ready while one answers (one down fails only its spaces). */
async function partsHealth(stores: Readonly<Record<string, Storage>>, probe: (storage: Storage) => Promise<unknown>): Promise<Health> {
  const started = performance.now();
  const results = await Promise.all(
    Object.entries(stores).map(async ([name, store]): Promise<[string, StoreHealth]> => {
      try {
        await probe(store);
        return [name, { ok: true, storeMs: Math.round(performance.now() - started) }];
      } catch (error) {
        return [name, { ok: false, reason: error instanceof Error ? error.message : String(error) }];
      }
    }),
  );
  const answered = results.filter(([, health]) => health.ok);
  if (answered.length === 0)
    throw new Error(`no store answered: ${results.map(([name, health]) => `${name}: ${health.ok ? 'ok' : health.reason}`).join('; ')}`);
  return {
    ok: true,
    status: 'ok',
    storeMs: Math.max(...answered.map(([, health]) => (health as { storeMs: number }).storeMs)),
    stores: Object.fromEntries(results),
  };
}

/** {@link checkHealth} as `handleRequest` serves it. The store's own error is not sent: it may name hosts or users. */
export async function healthReply(request: Request, ctx: SyncContext): Promise<Reply> {
  const health = await checkHealth(ctx);
  if (health.status === 'store-unavailable') reportError(ctx, new Error(`Health check failed: ${health.reason}`), { request, operation: 'health' });
  // A store's own error is not sent: it may name hosts or users.
  const body =
    health.status === 'store-unavailable'
      ? { ok: false, status: health.status }
      : health.ok && health.stores
        ? { ...health, stores: hideReasons(health.stores) }
        : health;
  return json(body, health.ok ? 200 : 503, { 'cache-control': 'no-store' });
}

function hideReasons(stores: Record<string, StoreHealth>): Record<string, { ok: boolean; storeMs?: number }> {
  return Object.fromEntries(Object.entries(stores).map(([name, store]) => [name, store.ok ? store : { ok: false }]));
}

const PROBE = new SpaceKeys('').meta;
