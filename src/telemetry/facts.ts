import type { Reply } from '../base/reply.js';

/**
 * What a pull or push came to, as its handler returns it: plain, tagged data, made once per
 * request whether anyone listens or not, and recorded in one place, `observe` (telemetry.ts).
 * Handlers know nothing of spans or metrics; telemetry knows nothing of the sync layer above
 * it, so the shapes here are only what it reads.
 */

/** How many of a push's mutations each mutator ran (`processed`), threw (`failed`) or was sent again (`skipped`). */
export interface MutationTally {
  processed: number;
  failed: number;
  skipped: number;
}

/** Who a request is for, once it passed its checks. */
export interface Requester {
  space: string;
  /** The pull or push's client group (a pull of version 0 names its client instead). */
  clientGroup: { clientGroupID: string } | { clientID: string };
  /** Its schema version, when the context's `schema` serves it: a set the app bounds, so a label (`viewsync.schema_version`). */
  schemaVersion: string | undefined;
}

/** The request spoke a pull, push or schema version this server does not: answered `VersionNotSupported`. */
export interface Unsupported {
  kind: 'unsupported';
  reply: Reply;
}

/** The request failed (an HTTPError, a TemporaryError, anything else: a 500), after `by` was known or before. */
export interface Failed {
  kind: 'failed';
  by: Requester | undefined;
  error: unknown;
  reply: Reply;
}

/** A pull answered with a patch. */
export interface Patched {
  kind: 'patched';
  by: Requester;
  /** The patch (its start, when the rest is read as it is sent). */
  patch: ReadonlyArray<{ readonly op: string }>;
  /** A patch read as it is sent: resolves with its operations once it is whole (never, when it broke off). */
  sentOperations: Promise<number> | undefined;
  reply: Reply;
}

/** A pull that found the client's state lost: answered `ClientStateNotFound`. */
export interface PullLost {
  kind: 'lost';
  by: Requester;
  reply: Reply;
}

/**
 * What telemetry reads of a push that ran (sync's `PushOutcome`): `applied`, `stopped` by a
 * TemporaryError (a 503), or `lost` (the client's state: `ClientStateNotFound`, its failures not told).
 */
export interface PushRan {
  kind: 'applied' | 'stopped' | 'lost';
  /** Committed mutations by the name the client sent. */
  tally: ReadonlyMap<string, MutationTally>;
  /** Milliseconds the push waited for its transactions to start. */
  waitedMs: number;
  /** The most jobs that shared one of its transactions. */
  batchSize: number;
  /** Mutations whose mutator threw, or whose quota refused them. */
  failures: ReadonlyArray<{ mutation: { name: string; id: number }; error: unknown }>;
}

/** A push whose mutations ran (all, some, or none kept): what came of them. */
export interface Pushed {
  kind: 'pushed';
  by: Requester;
  /** How many mutations it carried (after the per-push limit). */
  mutations: number;
  outcome: PushRan;
  /** The app's mutators: only their names are read, to bound a metric's label set. */
  mutators: Readonly<Record<string, unknown>>;
  reply: Reply;
}

/** What a pull came to. */
export type PullFacts = Unsupported | Failed | Patched | PullLost;

/** What a push came to. */
export type PushFacts = Unsupported | Failed | Pushed;
