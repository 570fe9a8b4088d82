import { collectAfterPush } from './collect-garbage.js';
import { type ErrorInfo, type SyncContext, reportError } from './context.js';
import { notifierOf } from './state.js';

/**
 * What a committed change of `space` sets off, whoever made it (a push, or the app's backend):
 * pokes to the space's subscribers, and now and then a little housekeeping.
 */
export function afterChange(ctx: SyncContext, space: string, info: ErrorInfo): void {
  announce(ctx, space, info);
  collectAfterPush(ctx, space, info);
}

/** Tells `space`'s poke streams, on every instance the notifier reaches, that it changed. */
export function announce(ctx: SyncContext, space: string, info: ErrorInfo): void {
  if (ctx.pokes === false) return;
  const failed = (error: unknown) => reportError(ctx, error, info);
  try {
    const sent = notifierOf(ctx).notify(space);
    // The push is committed whatever happens here: a lost poke only delays clients to their next pull.
    if (sent !== undefined) sent.catch(failed);
  } catch (error) {
    failed(error);
  }
}
