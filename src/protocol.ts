/**
 * `viewsync/protocol`: the valibot schemas of the wire messages, each with its type of the same
 * name, for those who speak the protocol themselves (a client of their own, a proxy, a test).
 */
export type { JSONValue } from './protocol/json.js';
export { PullRequestV0, PullRequestV1, PullRequest } from './protocol/pull-request.js';
export { PushRequest, Mutation } from './protocol/push-request.js';
export { PatchOperation, PullResponseV0, PullResponseV1, ClientStateNotFoundResponse, VersionNotSupportedResponse } from './protocol/pull-response.js';
