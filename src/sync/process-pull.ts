import type { PullRequest } from '../protocol/pull-request.js';
import type { ClientStateNotFoundResponse, PullResponseV0, PullResponseV1 } from '../protocol/pull-response.js';
import { HTTPError } from '../server/errors.js';
import type { Storage } from '../storage/types.js';
import type { Strategy } from './strategy.js';

/**
 * Answers a pull of either version from one read-only transaction, so the lastMutationIDs are
 * read with the patch they belong to (spec, pull rule 2). Client groups and clients are the
 * caller's own (spec, "Authentication", rule 3): another user's of the same ID are not seen.
 */
export async function processPull(
  storage: Storage,
  strategy: Strategy,
  pull: PullRequest,
  space: string,
  userID: string | undefined,
): Promise<PullResponseV1 | PullResponseV0 | ClientStateNotFoundResponse> {
  return storage.transaction(async (tx) => {
    const session = await strategy.open(tx, space);
    if (pull.pullVersion === 1) {
      const result = await session.pull(pull.cookie, { userID, clientGroupID: pull.clientGroupID });
      return result === 'ClientStateNotFound' ? { error: result } : result;
    }

    const client = await session.getClient(userID, pull.clientID);
    if (client === undefined && pull.lastMutationID > 0) {
      // Spec, pull rule 7: only a new client is unknown; one that saw mutations processed means
      // data was deleted, and the spec's answer is to abort with a 500.
      throw new HTTPError(500, `Client ${JSON.stringify(pull.clientID)} claims lastMutationID ${pull.lastMutationID} but the server has no record of it`);
    }
    const result = await session.pull(pull.cookie, undefined);
    if (result === 'ClientStateNotFound') return { error: result };
    return { cookie: result.cookie, lastMutationID: client?.lastMutationID ?? 0, patch: result.patch };
  }, { readOnly: true, space });
}
