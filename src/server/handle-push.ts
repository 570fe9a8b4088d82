import { PUSH_VERSIONS, PushRequest } from '../protocol/push-request.js';
import { processPush, type PushOutcome } from '../sync/process-push.js';
import { quotaOf } from '../sync/transactions/quota.js';
import { afterChange } from '../context/after-change.js';
import { type SyncContext, reportError } from '../context/context.js';
import { checkContext } from '../context/state.js';
import { json, type Reply, toResponse } from '../base/reply.js';
import { failed, prepare, requester } from './prepare.js';
import { observe } from '../telemetry/telemetry.js';
import type { PushFacts, Requester } from '../telemetry/facts.js';

/**
 * The push endpoint: runs a client group's pending mutations in order, in one transaction.
 * Answers 200 `{}` once they are committed, or 503 when a mutator threw a `TemporaryError` or
 * ran out of time. Never rejects; every failure is a `Response`.
 *
 * @example
 * const ctx = createContext({ storage, mutators }); // once, at startup
 * const response = await handlePush(request, ctx);
 */
export async function handlePush(request: Request, ctx: SyncContext): Promise<Response> {
  return toResponse(await pushReply(request, ctx));
}

/** {@link handlePush}, answering with a {@link Reply}. */
export function pushReply(request: Request, ctx: SyncContext): Promise<Reply> {
  checkContext(ctx);
  return observe('push', request, () => push(request, ctx), ctx.state.live);
}

/** Runs a push: what it came to, its reply among them. Never rejects. */
async function push(request: Request, ctx: SyncContext): Promise<PushFacts> {
  let by: Requester | undefined;
  try {
    const prepared = await prepare(request, ctx, PUSH);
    // prepare answers only a version it does not speak.
    if ('status' in prepared) return { kind: 'unsupported', reply: prepared };
    const { body, space, userID, limits, older } = prepared;
    by = requester(ctx, space, body, body.schemaVersion);
    const perMutation = ctx.transactionPerMutation;
    const quota = quotaOf(ctx.quotas, space);
    const outcome = await processPush(ctx.storage, ctx.mutators, body, {
      space,
      userID,
      limits,
      perMutation,
      session: ctx.session,
      clock: { now: ctx.clock(), touchEveryMs: ctx.touchEveryMs },
      quota,
      older: older && { schemaVersion: body.schemaVersion, steps: older },
    });
    // A refusal answers as a thrown HTTPError would: a 400, no poke, its totals not told.
    if (outcome.kind === 'refused') return failed(request, ctx, outcome.error, by);
    // The pushing group is poked whatever it wrote: it learns its lastMutationIDs by pulling.
    if (outcome.changed)
      afterChange(ctx, space, { request }, outcome.touched && { keys: outcome.touched, groups: [{ userID, clientGroupID: body.clientGroupID }] });
    return { kind: 'pushed', by, mutations: body.mutations.length, outcome, mutators: ctx.mutators, reply: replyTo(request, ctx, outcome) };
  } catch (thrown) {
    return failed(request, ctx, thrown, by);
  }
}

/** The answer to a push that ran; its mutations' failures go to `onError`, unless the client's state was lost. */
function replyTo(request: Request, ctx: SyncContext, outcome: Exclude<PushOutcome, { kind: 'refused' }>): Reply {
  if (outcome.kind === 'lost') return json({ error: 'ClientStateNotFound' });
  for (const { mutation, error } of outcome.failures) reportError(ctx, error, { request, mutation });
  return outcome.kind === 'stopped' ? outcome.stoppedBy.toReply() : json({});
}

const PUSH = {
  kind: 'push',
  versionField: 'pushVersion',
  versions: PUSH_VERSIONS,
  schema: PushRequest,
  // The client re-sends every pending mutation and never splits a push: run the first ones now,
  // and the rest, still pending, come again in the next push.
  bound: (raw: Record<string, unknown>, limits: { mutationsPerPush: number }) =>
    Array.isArray(raw.mutations) && raw.mutations.length > limits.mutationsPerPush
      ? { ...raw, mutations: raw.mutations.slice(0, limits.mutationsPerPush) }
      : raw,
  longID(push: PushRequest, fits: (id: string) => boolean): string | undefined {
    for (const field of ['clientGroupID', 'profileID', 'schemaVersion'] as const) if (!fits(push[field])) return field;
    for (const [i, { clientID, name }] of push.mutations.entries()) {
      if (!fits(clientID)) return `mutations.${i}.clientID`;
      if (!fits(name)) return `mutations.${i}.name`;
    }
    return undefined;
  },
} as const;
