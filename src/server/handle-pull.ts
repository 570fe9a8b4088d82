import { PULL_VERSIONS, PullRequest } from '../protocol/pull-request.js';
import { processPull, type PullOptions } from '../sync/process-pull.js';
import { announce } from '../context/after-change.js';
import { checkContext } from '../context/state.js';
import type { ViewInterest } from '../sync/interest.js';
import { reportError, type SyncContext } from '../context/context.js';
import { isTemporary } from '../storage/unreachable.js';
import { TemporaryError } from '../base/errors.js';
import { json, type Reply, toResponse } from '../base/reply.js';
import { failed, prepare, requester } from './prepare.js';
import { pullBody } from './pull-body.js';
import type { Patch } from '../sync/version/patch.js';
import { observe } from '../telemetry/telemetry.js';
import type { PullFacts, Requester } from '../telemetry/facts.js';
import { downgradeOf } from '../sync/schema/downgrade.js';
import { type FirstSyncOrderRequest, orderOf } from '../sync/first-sync-order.js';

/**
 * The pull endpoint: answers a pull of version 0 or 1 with the patch that brings the client's
 * view up to date. Never rejects; every failure is a `Response`.
 *
 * @example
 * const ctx = createContext({ storage, mutators }); // once, at startup
 * const response = await handlePull(request, ctx);
 */
export async function handlePull(request: Request, ctx: SyncContext): Promise<Response> {
  return toResponse(await pullReply(request, ctx));
}

/** {@link handlePull}, answering with a {@link Reply}. */
export function pullReply(request: Request, ctx: SyncContext): Promise<Reply> {
  checkContext(ctx);
  return observe('pull', request, () => pull(request, ctx), ctx.state.live);
}

/** Runs a pull: what it came to, its reply among them. Never rejects. */
async function pull(request: Request, ctx: SyncContext): Promise<PullFacts> {
  let by: Requester | undefined;
  try {
    const prepared = await prepare(request, ctx, PULL);
    // prepare answers only a version it does not speak.
    if ('status' in prepared) return { kind: 'unsupported', reply: prepared };
    const { body, space, older } = prepared;
    by = requester(ctx, space, body.pullVersion === 1 ? body : { clientID: body.clientID }, body.schemaVersion);
    const views = ctx.view && { view: ctx.view, limits: ctx.limits, indexes: ctx.indexes };
    // With a view, what this answer depends on narrows the pokes of the group's streams.
    const pulled = views && body.pullVersion === 1 ? ctx.hub?.pulling(space, prepared.userID, body.clientGroupID) : undefined;
    let interest: ViewInterest | undefined;
    // What the answer has sent so far, for a first sync in pages.
    const sent = { chars: 0 };
    let result: Awaited<ReturnType<typeof processPull>>;
    try {
      // Only a hub with streams uses it: without one the view's reads are not recorded.
      const onInterest = pulled && ((found: ViewInterest) => (interest = found));
      result = await processPull({
        storage: ctx.storage,
        pull: body,
        space,
        userID: prepared.userID,
        clock: { now: ctx.clock(), touchEveryMs: ctx.touchEveryMs },
        downgrade: older && downgradeOf(older, ctx.limits.appCodeMs),
        views,
        shareReads: ctx.shareReads,
        onInterest,
        paging:
          body.pullVersion === 1
            ? paging(
                ctx,
                sent,
                () => announce(ctx, space, { request }, { keys: [], groups: [{ userID: prepared.userID, clientGroupID: body.clientGroupID }] }),
                request,
              )
            : undefined,
      });
    } finally {
      pulled?.(interest);
    }
    if ('error' in result) return { kind: 'lost', by, reply: json(result) };
    if (result.rest === undefined) return { kind: 'patched', by, patch: result.patch, sentOperations: undefined, reply: pullBody(result) };
    const rest = reporting(result.rest, result.patch.length, ctx, request);
    return { kind: 'patched', by, patch: result.patch, sentOperations: rest.operations, reply: pullBody({ ...result, rest: rest.pages }, sent) };
  } catch (thrown) {
    return failed(request, ctx, thrown, by);
  }
}

const PULL = {
  kind: 'pull',
  versionField: 'pullVersion',
  versions: PULL_VERSIONS,
  schema: PullRequest,
  longID(pull: PullRequest, fits: (id: string) => boolean): string | undefined {
    if (pull.pullVersion === 1 ? !fits(pull.clientGroupID) : !fits(pull.clientID)) return pull.pullVersion === 1 ? 'clientGroupID' : 'clientID';
    return !fits(pull.profileID) ? 'profileID' : !fits(pull.schemaVersion) ? 'schemaVersion' : undefined;
  },
} as const;

/**
 * `rest` (a reset read as it is sent), counting its operations after the `start` ones, and
 * telling `onError` of a failure other than a temporary one, as a failure before the answer
 * began would be: the answer is under way, so the client learns of it only as a broken
 * response, which it drops, to pull again.
 */
function reporting<R>(
  rest: AsyncGenerator<Patch, R, undefined>,
  start: number,
  ctx: SyncContext,
  request: Request,
): { pages: AsyncGenerator<Patch, R, undefined>; operations: Promise<number> } {
  let whole!: (operations: number) => void;
  const operations = new Promise<number>((resolve) => (whole = resolve));
  async function* pages(): AsyncGenerator<Patch, R, undefined> {
    let count = start;
    try {
      for (let next = await rest.next(); ; next = await rest.next()) {
        if (next.done) {
          whole(count);
          return next.value;
        }
        count += next.value.length;
        yield next.value;
      }
    } catch (error) {
      if (!isTemporary(error) && !(error instanceof TemporaryError)) reportError(ctx, error, { request });
      throw error;
    } finally {
      // Stopped early (the client went): the reads stop too.
      await rest.return(undefined as never);
    }
  }
  return { pages: pages(), operations };
}

/**
 * A first sync in pages, when the context asks for it (pulls of version 1 only: a page's poke
 * names the client group): a page's room is its bytes (as characters) less what `sent` counted,
 * and its order the app's. An order function that throws or gives junk is the app's bug, told to
 * `onError`; the sync then goes in key order, as it would without one: the order only decides
 * what shows first, never what is sent, so it is not worth failing a pull over.
 */
function paging(ctx: SyncContext, sent: { chars: number }, paged: () => void, request: Request): PullOptions['paging'] {
  if (ctx.firstSync === undefined) return undefined;
  const chars = ctx.firstSync.pageBytes;
  const { order: option } = ctx.firstSync;
  const order =
    option &&
    ((asked: FirstSyncOrderRequest) => {
      try {
        return orderOf(option, asked, ctx.limits);
      } catch (error) {
        reportError(ctx, error, { request });
        return [];
      }
    });
  return { room: () => chars - sent.chars, paged, order };
}
