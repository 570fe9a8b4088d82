import { collectAfterPush } from './collect-garbage.js';
import { type ErrorInfo, type SyncContext, reportError } from './context.js';
import { notifierOf, stateOf } from './state.js';
import type { ChangeDetail } from '../poke/notifier.js';

/**
 * What a committed change of `space` sets off, whoever made it (a push, or the app's backend):
 * pokes to the space's subscribers (those it concerns, when `detail` says what it touched), and
 * now and then a little housekeeping.
 */
export function afterChange(ctx: SyncContext, space: string, info: ErrorInfo, detail?: ChangeDetail): void {
  announce(ctx, space, info, detail);
  for (const listener of stateOf(ctx).changeListeners) {
    try {
      listener(space);
    } catch (error) {
      reportError(ctx, error, info);
    }
  }
  collectAfterPush(ctx, space, info);
}

/** Tells `space`'s poke streams, on every instance the notifier reaches, that it changed. */
export function announce(ctx: SyncContext, space: string, info: ErrorInfo, detail?: ChangeDetail): void {
  if (ctx.pokes === false) return;
  const failed = (error: unknown) => reportError(ctx, error, info);
  try {
    const sent = notifierOf(ctx).notify(space, detail);
    // The push is committed whatever happens here: a lost poke only delays clients to their next pull.
    if (sent !== undefined) sent.catch(failed);
  } catch (error) {
    failed(error);
  }
}
