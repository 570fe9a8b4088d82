import * as v from 'valibot';
import { JSONValue, WellFormedString } from './json.js';

/** One mutation the client ran locally and asks the server to run. */
export const Mutation = v.object({
  clientID: WellFormedString,
  id: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
  name: v.string(),
  // The client omits `args` when a mutator is called without them (JSON drops `undefined`).
  args: v.optional(JSONValue),
  // The client sends performance.now(); the protocol never reads it.
  timestamp: v.optional(v.number()),
});

/** One mutation the client ran locally and asks the server to run. */
export type Mutation = v.InferOutput<typeof Mutation>;

/** A push of protocol version 1: pending mutations of one client group, in order. */
export const PushRequest = v.object({
  pushVersion: v.literal(1),
  clientGroupID: WellFormedString,
  mutations: v.array(Mutation),
  profileID: v.string(),
  schemaVersion: v.string(),
});

/** A push of protocol version 1: pending mutations of one client group, in order. */
export type PushRequest = v.InferOutput<typeof PushRequest>;

/** The push versions this server speaks. */
export const PUSH_VERSIONS: readonly number[] = [1];
