import { PULL_VERSIONS, PullRequest } from '../protocol/pull-request.js';
import { globalVersion } from '../sync/global-version.js';
import { processPull } from '../sync/process-pull.js';
import type { SyncContext } from './context.js';
import { json } from './errors.js';
import { prepare, respond } from './prepare.js';

/**
 * The pull endpoint: answers a pull of version 0 or 1 with the patch that brings the client's
 * view up to date. Never rejects; every failure is a `Response`.
 *
 * @example
 * const response = await handlePull(request, { storage, mutators });
 */
export function handlePull(request: Request, ctx: SyncContext): Promise<Response> {
  return respond(request, ctx, async () => {
    const prepared = await prepare(request, ctx, { kind: 'pull', versionField: 'pullVersion', versions: PULL_VERSIONS, schema: PullRequest });
    if (prepared instanceof Response) return prepared;
    return json(await processPull(ctx.storage, globalVersion, prepared.body, prepared.space, prepared.userID));
  });
}
