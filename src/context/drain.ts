import type { SyncContext } from './context.js';
import { checkContext } from './state.js';

/** Options for {@link drain}. */
export interface DrainOptions {
  /**
   * Milliseconds a client told to reconnect waits first, at most: each poke stream gets a delay
   * between a quarter of it and all of it, so that its clients do not all come back at once, and
   * all are back (and have pulled) within it. Default: 1,000.
   */
  retryMs?: number;
}

/**
 * Marks `ctx` as shutting down, for a server about to stop: its poke streams end now, each
 * telling its client (an `EventSource` or `viewsync/client`) when to reconnect, which a load
 * balancer sends to another instance; new poke streams get 503 with `Retry-After`, and the
 * health check ({@link checkHealth}) fails, so that no new traffic is routed here. Pulls and
 * pushes are still served: the ones in flight finish. Every adapter's `stop()` calls it; call it
 * yourself when you mount `createListener` or `handleRequest` in a server of your own, before
 * closing it. Returns a function that undoes it, for a context that will be served again.
 *
 * @example
 * process.once('SIGTERM', () => { drain(ctx); server.close(); });
 */
export function drain(ctx: SyncContext, options: DrainOptions = {}): () => void {
  checkContext(ctx);
  const state = ctx.state;
  state.drains++;
  ctx.hub?.closeAll(options.retryMs ?? 1_000);
  let undone = false;
  return () => {
    if (undone) return;
    undone = true;
    state.drains--;
  };
}

/** True while {@link drain} has marked `ctx` and not been undone. */
export function isDraining(ctx: SyncContext): boolean {
  return ctx.state.drains > 0;
}
