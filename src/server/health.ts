import { SpaceKeys } from '../sync/keys.js';
import { type SyncContext, reportError } from '../context/context.js';
import { isDraining } from '../context/drain.js';
import { json, type Reply } from '../base/reply.js';

/** Options for {@link checkHealth}. */
export interface HealthOptions {
  /** Milliseconds the store has to answer a read before the check fails. Default: 2,000. */
  timeoutMs?: number;
}

/** What {@link checkHealth} found. */
export type Health =
  | { ok: true; status: 'ok'; storeMs: number }
  | { ok: false; status: 'draining' }
  | { ok: false; status: 'store-unavailable'; reason: string };

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
  if (isDraining(ctx)) return { ok: false, status: 'draining' };
  const timeoutMs = options.timeoutMs ?? 2_000;
  const started = performance.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the store did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    // The default space's meta record: a read every store answers the way a pull starts.
    await Promise.race([ctx.storage.transaction((tx) => tx.get(PROBE), { readOnly: true, space: '' }), late]);
    return { ok: true, status: 'ok', storeMs: Math.round(performance.now() - started) };
  } catch (error) {
    return { ok: false, status: 'store-unavailable', reason: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
}

/** {@link checkHealth} as `handleRequest` serves it. The store's own error is not sent: it may name hosts or users. */
export async function healthReply(request: Request, ctx: SyncContext): Promise<Reply> {
  const health = await checkHealth(ctx);
  if (health.status === 'store-unavailable') reportError(ctx, new Error(`Health check failed: ${health.reason}`), { request, operation: 'health' });
  const body = health.status === 'store-unavailable' ? { ok: false, status: health.status } : health;
  return json(body, health.ok ? 200 : 503, { 'cache-control': 'no-store' });
}

const PROBE = new SpaceKeys('').meta;
