import * as v from 'valibot';
import { JSONValue, WellFormedString } from './json.js';

/** A pull of protocol version 1: a whole client group pulls at once. */
export const PullRequestV1 = v.object({
  pullVersion: v.literal(1),
  clientGroupID: WellFormedString,
  cookie: JSONValue,
  profileID: v.string(),
  schemaVersion: v.string(),
});

/** A pull of protocol version 1: a whole client group pulls at once. */
export type PullRequestV1 = v.InferOutput<typeof PullRequestV1>;

/** A pull of protocol version 0: one client pulls and learns its own lastMutationID. */
export const PullRequestV0 = v.object({
  pullVersion: v.literal(0),
  clientID: WellFormedString,
  cookie: JSONValue,
  lastMutationID: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
  profileID: v.string(),
  schemaVersion: v.string(),
});

/** A pull of protocol version 0: one client pulls and learns its own lastMutationID. */
export type PullRequestV0 = v.InferOutput<typeof PullRequestV0>;

/** A pull of either version, told apart by `pullVersion`. */
export const PullRequest = v.variant('pullVersion', [PullRequestV1, PullRequestV0]);

/** A pull of either version, told apart by `pullVersion`. */
export type PullRequest = v.InferOutput<typeof PullRequest>;

/** The pull versions this server speaks. */
export const PULL_VERSIONS: readonly number[] = [0, 1];
