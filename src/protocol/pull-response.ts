import * as v from 'valibot';
import { JSONValue } from './json.js';

/** One step of a patch: set a key, remove a key, or remove everything. */
export const PatchOperation = v.variant('op', [
  v.object({ op: v.literal('put'), key: v.string(), value: JSONValue }),
  v.object({ op: v.literal('del'), key: v.string() }),
  v.object({ op: v.literal('clear') }),
]);

/** One step of a patch: set a key, remove a key, or remove everything. */
export type PatchOperation = v.InferOutput<typeof PatchOperation>;

/** A successful version 1 pull. */
export const PullResponseV1 = v.object({
  cookie: JSONValue,
  lastMutationIDChanges: v.record(v.string(), v.number()),
  patch: v.array(PatchOperation),
});

/** A successful version 1 pull. */
export type PullResponseV1 = v.InferOutput<typeof PullResponseV1>;

/** A successful version 0 pull. */
export const PullResponseV0 = v.object({
  cookie: JSONValue,
  lastMutationID: v.number(),
  patch: v.array(PatchOperation),
});

/** A successful version 0 pull. */
export type PullResponseV0 = v.InferOutput<typeof PullResponseV0>;

/** Tells the client that the server does not know its state; the client starts a new group. */
export const ClientStateNotFoundResponse = v.object({ error: v.literal('ClientStateNotFound') });

/** Tells the client that the server does not know its state; the client starts a new group. */
export type ClientStateNotFoundResponse = v.InferOutput<typeof ClientStateNotFoundResponse>;

/** Tells the client that the server cannot handle its pull, push or schema version. */
export const VersionNotSupportedResponse = v.object({
  error: v.literal('VersionNotSupported'),
  versionType: v.optional(v.picklist(['pull', 'push', 'schema'])),
});

/** Tells the client that the server cannot handle its pull, push or schema version. */
export type VersionNotSupportedResponse = v.InferOutput<typeof VersionNotSupportedResponse>;
