import { HTTPError } from '../server/errors.js';
import type { SpaceSession } from './strategy.js';

/**
 * Checks that a client group is the caller's (spec, "Authentication", rule 3): its owner is the
 * user who first pushed for it. Resolves to whether the group exists; throws 403 when it is
 * someone else's, with a message that tells nothing about the group.
 */
export async function assertOwner(session: SpaceSession, clientGroupID: string, userID: string | undefined): Promise<boolean> {
  const group = await session.getGroup(clientGroupID);
  if (group !== undefined && group.owner !== (userID ?? null)) {
    throw new HTTPError(403, 'This client group belongs to another user');
  }
  return group !== undefined;
}
