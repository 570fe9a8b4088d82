import { PUSH_VERSIONS, PushRequest } from '../protocol/push-request.js';
import { globalVersion } from '../sync/global-version.js';
import { processPush } from '../sync/process-push.js';
import { type SyncContext, reportError } from './context.js';
import { json } from './errors.js';
import { prepare, respond } from './prepare.js';

/**
 * The push endpoint: runs a client group's pending mutations in order, in one transaction.
 * Answers 200 `{}` once they are committed, or 503 when a mutator threw a `TemporaryError`.
 * Never rejects; every failure is a `Response`.
 *
 * @example
 * const response = await handlePush(request, { storage, mutators });
 */
export function handlePush(request: Request, ctx: SyncContext): Promise<Response> {
  return respond(request, ctx, async () => {
    const prepared = await prepare(request, ctx, { kind: 'push', versionField: 'pushVersion', versions: PUSH_VERSIONS, schema: PushRequest });
    if (prepared instanceof Response) return prepared;
    const { body, space, userID } = prepared;
    const outcome = await processPush(ctx.storage, globalVersion, ctx.mutators, body, space, userID, ctx.transactionPerMutation);
    if (outcome.clientStateNotFound) return json({ error: 'ClientStateNotFound' });
    for (const { mutation, error } of outcome.failures) reportError(ctx, error, { request, mutation });
    return outcome.stoppedBy ? outcome.stoppedBy.toResponse() : json({});
  });
}
