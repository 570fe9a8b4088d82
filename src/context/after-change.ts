import { collectAfterPush } from './collect-garbage.js';
import { type ErrorInfo, type SyncContext, reportError } from './context.js';
import type { ChangeDetail } from '../poke/notifier.js';
import { writeFeedRecord } from '../sync/feed/feed-record.js';

/**
 * What a committed change of `space` sets off, whoever made it (a push, or the app's backend):
 * pokes to the space's subscribers (those it concerns, when `detail` says what it touched), and
 * now and then a little housekeeping.
 */
export function afterChange(ctx: SyncContext, space: string, info: ErrorInfo, detail?: ChangeDetail): void {
  announce(ctx, space, info, detail);
  for (const listener of ctx.state.changeListeners) {
    try {
      listener(space);
    } catch (error) {
      reportError(ctx, error, info);
    }
  }
  collectAfterPush(ctx, space, info);
  if (ctx.changes !== undefined || ctx.history !== undefined) recordFeed(ctx);
}

/**
 * Once a context with the feed has committed, the store records that it keeps the feed, so that
 * every other writer (the CLI, an instance on an older config) keeps it too, in new spaces as
 * well (see feed-record.ts). Once a context, in the background; tried again after a failure.
 */
function recordFeed(ctx: SyncContext): void {
  const state = ctx.state;
  state.feedRecorded ??= writeFeedRecord(ctx.storage, true, ctx.clock()).catch((error: unknown) => {
    state.feedRecorded = undefined;
    reportError(ctx, error, { operation: 'changes' });
  });
}

/** Tells `space`'s poke streams, on every instance the notifier reaches, that it changed. */
export function announce(ctx: SyncContext, space: string, info: ErrorInfo, detail?: ChangeDetail): void {
  if (ctx.pokes === false) return;
  const failed = (error: unknown) => reportError(ctx, error, info);
  try {
    const sent = ctx.notifier.notify(space, detail);
    // The push is committed whatever happens here: a lost poke only delays clients to their next pull.
    if (sent !== undefined) sent.catch(failed);
  } catch (error) {
    failed(error);
  }
}
