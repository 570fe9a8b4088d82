import type { PokeOptions } from '../poke/options.js';
import type { Storage } from '../storage/types.js';
import type { Limits } from '../sync/transactions/limits.js';
import type { Mutators } from '../sync/transactions/mutator.js';
import type { Quotas } from '../sync/transactions/quota.js';
import type { View } from '../sync/view.js';
import type { IndexDefinitions } from '../sync/version/indexes.js';
import type { ErrorInfo } from './log.js';
import { fetchRequest } from '../base/request-stand-in.js';
import type { RateOptions } from './rates.js';
import type { SchemaOptions } from '../sync/schema/schema-options.js';
import type { FirstSyncOrder } from '../sync/first-sync-order.js';

import type { Notifier } from '../poke/notifier.js';
import type { PokeHub } from '../poke/hub.js';
import type { Retention, SessionOptions } from '../sync/version/strategy.js';
import type { Rates } from './rates.js';
import type { LiveStats } from '../telemetry/live.js';
import type { Reply } from '../base/reply.js';
import type { ResolvedRates, ResolvedChanges, ResolvedCors, ResolvedFirstSync, ResolvedInspector, ResolvedPokes } from './options-schema.js';
import type { InspectorAction } from './inspector-action.js';

export type { ErrorInfo } from './log.js';
export type { InspectorAction } from './inspector-action.js';

/**
 * Everything the handlers need: where data lives, how mutations run, and who may do what. Give
 * them to `createContext` once, at startup, and pass the context it returns to every call.
 *
 * @example
 * const ctx = createContext({
 *   storage: memoryStorage(),
 *   mutators: { put: async (tx, args) => { const { key, value } = args as { key: string; value: JSONValue }; await tx.set(key, value); } },
 * });
 */
export interface SyncOptions {
  /** The store that holds every space's data and client records. */
  storage: Storage;
  /** Mutators by name; a push naming any other mutator has that mutation skipped. */
  mutators: Mutators;
  /**
   * Who sent the request: a user ID, or null to answer 401 (the client then calls `getAuth`).
   * Gets the request with its `Authorization` header as the client sent it. When absent, every
   * request is anonymous and client groups have no owner. Anything but a string or null (a
   * numeric ID, say) answers 500, and `onError` is told to return `String(id)`.
   */
  authenticate?: (request: Request) => string | null | Promise<string | null>;
  /**
   * Which space a request syncs: each space has its own data and version, so independent
   * workspaces, documents or tenants do not contend. Default: one space, `''`. Throw an
   * `HTTPError` (403) to refuse a user a space.
   */
  space?: (request: Request, userID: string | undefined) => string | Promise<string>;
  /**
   * Which part of the space each user may read: the key prefixes `view(tx, {userID,
   * clientGroupID})` returns, read from the space through `tx` (the client's `ReadTransaction`),
   * say from membership entries. A pull then carries exactly the entries under them, and when
   * they change, the entries that came into or left the view. Mutators still see the whole
   * space: what a user may write is for them to check, with `tx.userID`. Throw an `HTTPError`
   * to refuse a pull. Default: every user reads the whole space.
   */
  view?: View;
  /**
   * Indexes the server keeps for views, by name, defined as the client's are (`{prefix?,
   * jsonPointer}`): a view finds entries by a value of theirs with `tx.scan({indexName, prefix})`,
   * such as the flat todos (`todo/<id>`) of a list named in their values. Kept by every write;
   * built from the space's entries by its first write after a definition is added or changed.
   */
  indexes?: IndexDefinitions;
  /**
   * The client `schemaVersion`s this server accepts: one, a list, or a test. Any other gets
   * `VersionNotSupported` with `versionType: 'schema'`. Default: all.
   */
  schemaVersion?: string | readonly string[] | ((schemaVersion: string) => boolean);
  /**
   * Today's schema version and the older ones still served: how an older version's mutations
   * become today's (so an old client's offline work lands after a deploy, through the client's
   * mutation recovery), how its clients read today's entries, and when its window closes. Any
   * version not listed gets `VersionNotSupported`. Takes the place of `schemaVersion` (give one
   * or the other). See docs/schema-changes.md.
   */
  schema?: SchemaOptions;
  /**
   * Bounds on what one request may cost: body size, mutations per push, ID, key and value sizes,
   * and how long a mutator may run. Each default is generous (see {@link Limits}); the client
   * never splits a push, so a body limit a real push can reach blocks that client for good.
   */
  limits?: Partial<Limits>;
  /**
   * What each space may hold: `{ entries?, bytes? }` for every space, or a function of the space
   * giving its own (undefined: none; called once per push, so keep it cheap). A mutation whose
   * writes would take its space over one fails as if its mutator had thrown, with a
   * `QuotaExceededError` told to `onError`: skipped, its client's lastMutationID advanced, the
   * push goes on. Deletes and writes that shrink the space are always allowed. `transact` and
   * `mutate` reject with that error; `importSpace` is not held to quotas. Bytes count keys and
   * JSON values in UTF-8, as `inspect` does. Default: none.
   */
  quotas?: Quotas;
  /**
   * How often each client group (and each user) may push and pull, as token buckets kept in
   * this process (each instance counts alone). Over a rate, a request gets 429 with
   * `Retry-After` before it touches the store, and other groups and users are unaffected. The
   * real client ignores `Retry-After`: like any status but 200 and 401, it backs off from 30 ms,
   * doubling up to 60 s, and retries. Default: no limit.
   */
  rates?: RateOptions;
  /**
   * Told of every unexpected failure (a 5xx) and every mutation a mutator rejected, for logging.
   * Default: one line on `console.error` per failure, with what clients sent escaped, and at most
   * a few lines a second (repeats are counted, and the count printed once logging resumes).
   */
  onError?: (error: unknown, info: ErrorInfo) => void;
  /**
   * Run each mutation of a push in its own storage transaction instead of the whole push in one
   * (the default). A push then never holds the store's write lock for long, at the cost of a
   * transaction and a version per mutation; a push refused partway keeps what came before.
   */
  transactionPerMutation?: boolean;
  /**
   * Let pulls of a space that arrive together share one read-only transaction and each patch
   * they have in common: after a poke, a space's subscribers all pull at once, with the same
   * cookie, and then cost about one pull between them. Every pull still gets exactly the answer
   * it would get alone, and a patch is only shared between pulls of the same view (so never
   * between users, when there is a view). `false` gives each pull a transaction of its own.
   * Default: true.
   */
  shareReads?: boolean;
  /**
   * The poke endpoint (`GET …/poke`, Server-Sent Events) and the notices pushes send to it: how
   * often, through which notifier. Default: on, in this process. `false` serves no pokes.
   */
  pokes?: PokeOptions | false;
  /**
   * How long idle client groups and the tombstones of deleted entries are kept (see
   * `collectGarbage`). Default: 30 days each.
   */
  retention?: RetentionOptions;
  /** Milliseconds since the epoch, for retention and tombstones. Default: `Date.now`; tests set their own. */
  clock?: () => number;
  /** CORS for {@link handleRequest}: which origins may call. Default: any (`'*'`). */
  cors?: CorsOptions | false;
  /**
   * The change feed: given, every write also goes into each space's change log (its key, its
   * value before and after, and what made it), which `readChanges`, `GET …/changes` and
   * `viewsync changes` read in commit order from a cursor, and mutators' `emit` adds events to.
   * It costs a row per change. Kept for `retention.changesMs`. Default: off.
   */
  changes?: ChangeFeedOptions;
  /**
   * Every version kept (docs/history.md): given, every write goes into the change log (as with
   * `changes`), and housekeeping writes checkpoints of each space's history, so that reading a
   * space as of a version far back (`at`) costs about two full reads of it, not a read of the whole
   * log. History is kept for `retention.historyMs`. Without it, history can still be read, restored
   * and reverted wherever the change log is kept, each read undoing the log from now. Default: off.
   */
  history?: HistoryOptions;
  /**
   * A first sync in pages: the first pull of a space bigger than a page is answered a page of
   * about `pageBytes` at a time, each with a cookie that says where the next starts, and a poke
   * to the pulling client group's streams (`connectPokes`), on which the stock client pulls the
   * next. The client shows the space filling, in key order or in the `order` the app chose, as
   * each page arrives; the last ends with what changed meanwhile. Needs pokes. Default: off (a
   * first pull is one answer, sent as it is read).
   */
  firstSync?: FirstSyncOptions;
  /**
   * The inspector, a web page for operators served by `handleRequest` under any path ending in
   * `/_inspect/` (docs/inspector.md): spaces, client groups, keys, a user's view, live numbers,
   * the change feed, webhooks and history. Opened by its own secret, never by users' auth.
   * Default: off (those paths answer 404).
   */
  inspector?: InspectorOptions;
}

/** The inspector: see {@link SyncOptions.inspector}. */
export interface InspectorOptions {
  /** What an operator types to log in: a random string of 32 characters or more. Each login gets a cookie signed with it, so changing it logs everyone out. */
  secret: string;
  /** Only look: the page offers no action, and the server refuses one (webhook enable and replay, restore, revert). Default: false. */
  readOnly?: boolean;
  /** Told of every action, login and refused login (who: the client's address when the adapter gives it). Default: a line on `console.info`. */
  onAction?: (action: InspectorAction) => void;
}

/** Every version kept: see {@link SyncOptions.history}. */
export interface HistoryOptions {
  /**
   * The fewest versions between two checkpoints of a space's history; a new one is begun once
   * the versions since the last reach this and the space's entries, so checkpoints never hold
   * more rows than the log between them. Default: 1,000.
   */
  checkpointEvery?: number;
}

/** A first sync in pages: see {@link SyncOptions.firstSync}. */
export interface FirstSyncOptions {
  /** About how many bytes of JSON a page holds (one entry more, at most). Default: 4 MiB. */
  pageBytes?: number;
  /**
   * The key prefixes whose keys come first, in this order (each covers whole segments, as a
   * view's prefixes do; a narrower one before a wider; at most 100), the rest after in key order: what the
   * first screen shows, first. Or a function of the user, the client group and the prefixes of
   * the user's view, which returns them (a function that throws or gives no such list is told to
   * `onError`, and that sync goes in key order). A prefix outside the user's view sends nothing.
   * Default: key order.
   */
  order?: FirstSyncOrder;
}

/** The change feed's options: see {@link SyncOptions.changes}. */
export interface ChangeFeedOptions {
  /**
   * The secret `GET …/changes` asks for, as `Authorization: Bearer <secret>`: a random string of
   * 32 characters or more, known only to the app's backend (users' auth does not open it).
   * Without it the endpoint answers 404.
   */
  secret?: string;
  /**
   * Webhooks, by name (letters, digits, `_`, `.` and `-`): each POSTs the changes it wants to its
   * URL, in batches, at least once and in order per space, signed. A process delivers them while
   * `startWebhooks(ctx)` runs (or at each `deliverWebhooks(ctx)`); several may run: each batch is
   * leased to one. A name is what the delivery state in the store is kept under: renaming a
   * webhook starts it again from the oldest change the log holds.
   */
  webhooks?: Readonly<Record<string, WebhookOptions>>;
}

/** One webhook: see {@link ChangeFeedOptions.webhooks}. */
export interface WebhookOptions {
  /** Where deliveries are POSTed: http(s), to a public address unless `allowPrivateAddresses`. */
  url: string;
  /** Signs each delivery (`viewsync-signature`, checked with `verifyWebhook`): 32 characters or more, shared with the receiver only. */
  secret: string;
  /** Which spaces: a list, or a test. Default: every space. */
  spaces?: readonly string[] | ((space: string) => boolean);
  /** Key prefixes whose changes it wants (a prefix covers whole segments, as a view's does); `[]`: none. Default: every key. */
  prefixes?: readonly string[];
  /** Topics of events (`emit`) it wants; `[]`: none. Default: every event. */
  topics?: readonly string[];
  /** Changes per delivery, at most: 1 to 1,000. Default: 100. A delivery also stops past about 1 MB of JSON (one change may take more). */
  maxBatch?: number;
  /** How long a delivery may take before it counts as failed, in milliseconds. Default: 15,000. */
  timeoutMs?: number;
  /**
   * How long a batch is retried (1 s doubling up to 10 min between attempts) before the webhook
   * is disabled in that space, its reason recorded (`inspect`), until `enableWebhook`. Default:
   * 3 days.
   */
  retryForMs?: number;
  /** Let the URL be a loopback, private or link-local address (a receiver on the same host or network). Default: false. */
  allowPrivateAddresses?: boolean;
  /**
   * Spaces whose batches one request may carry, 1 to 1,000: above 1, `startWebhooks` sends the
   * batches of up to this many spaces due at once in one POST whose body is a
   * `WebhookDeliveries` (`{ webhook, delivery, deliveries }`, each entry a one-space delivery
   * with its own ID), for a receiver that takes them. Default: 1, one space per request (the
   * body a `WebhookDelivery`); `deliverWebhooks` always sends one space per request.
   */
  spacesPerDelivery?: number;
  /**
   * With `spacesPerDelivery` above 1: milliseconds a request that is not full waits, from when its
   * first space was due, for more spaces to go with it (a full one goes at once), 0 to 60,000. A
   * little wait turns a stream of requests of a space or two into fewer, fuller ones: less work
   * for the receiver and for the process that delivers, whose CPU the writes beside it share.
   * Default: 100.
   */
  gatherMs?: number;
}

/**
 * A server's context, made once by `createContext(options)`: its options checked and resolved
 * into plain fields (every default filled in), and the state it keeps while it serves. Every
 * handler, adapter and backend call takes it; a plain object is refused, since state kept for an
 * object made per request would be lost with it.
 */
export interface SyncContext {
  /** The options the context was made from, as given: `createContext({ ...ctx.options, shareReads: false })` makes a variant (with state of its own). */
  readonly options: Readonly<SyncOptions>;
  /** See {@link SyncOptions.storage}. */
  readonly storage: Storage;
  /** See {@link SyncOptions.mutators}. */
  readonly mutators: Mutators;
  /** See {@link SyncOptions.authenticate}; undefined: every request anonymous. */
  readonly authenticate: SyncOptions['authenticate'];
  /** See {@link SyncOptions.space}; undefined: one space, `''`. */
  readonly space: SyncOptions['space'];
  /** See {@link SyncOptions.view}; undefined: every user reads the whole space. */
  readonly view: View | undefined;
  /** See {@link SyncOptions.indexes}. */
  readonly indexes: IndexDefinitions | undefined;
  /** See {@link SyncOptions.schemaVersion}; undefined: every version (unless `schema`). */
  readonly schemaVersion: SyncOptions['schemaVersion'];
  /** See {@link SyncOptions.schema}. */
  readonly schema: SchemaOptions | undefined;
  /** Every limit, defaults filled in. */
  readonly limits: Limits;
  /** See {@link SyncOptions.rates}, defaults filled in (the buckets are in `state`); undefined: no limit. */
  readonly rates: ResolvedRates | undefined;
  /** See {@link SyncOptions.quotas}; undefined: none. */
  readonly quotas: Quotas | undefined;
  /** Who is told of failures: the option, or one rate-limited line on `console.error`. */
  readonly onError: (error: unknown, info: ErrorInfo) => void;
  /** See {@link SyncOptions.transactionPerMutation}. */
  readonly transactionPerMutation: boolean;
  /** See {@link SyncOptions.shareReads}. */
  readonly shareReads: boolean;
  /** The poke settings, defaults filled in (`maxStreams` is the hub's: see {@link PokeHub.fitToDescriptors}), or false for none. */
  readonly pokes: ResolvedPokes | false;
  /** How long each kind of record is kept, defaults filled in. */
  readonly retention: Retention;
  /** Milliseconds since the epoch: the option, or `Date.now`. */
  readonly clock: () => number;
  /** How often a client group's activity is written down: a tenth of `retention.clientGroupsMs`, so an idle group expires between 0.9 and 1 times it after its last sign. */
  readonly touchEveryMs: number;
  /** CORS, defaults filled in (any origin unless told), or false for no CORS headers. */
  readonly cors: ResolvedCors | false;
  /** The change feed, each webhook's defaults filled in; undefined: off. */
  readonly changes: ResolvedChanges | undefined;
  /** Every version kept, defaults filled in; undefined: off. */
  readonly history: Required<HistoryOptions> | undefined;
  /** A first sync in pages, defaults filled in; undefined: off. */
  readonly firstSync: ResolvedFirstSync | undefined;
  /** The inspector, defaults filled in; undefined: off. */
  readonly inspector: ResolvedInspector | undefined;
  /** How this context's writes are made: which indexes and logs they keep, and the store's bound on keys. */
  readonly session: SessionOptions;
  /** Where this context hears of and announces changes: `pokes.notifier`, or the store's in-process one. */
  readonly notifier: Notifier;
  /** The poke streams; undefined when `pokes` is false. */
  readonly hub: PokeHub | undefined;
  /** What changes while the context serves (drains, rate buckets, housekeeping…): apart from the options, not enumerable, so a spread of a context carries none. */
  readonly state: ContextState;
}

/**
 * What a context keeps while it serves, made with it by createContext and gone with it. Store-wide
 * state is kept by the store's own modules instead, keyed by the store: two contexts over one
 * store share its commit queue (sync/batching/group-commit.ts), its in-process notifier
 * (poke/notifier.ts) and its view cache (sync/view.ts).
 */
export interface ContextState {
  /** The buckets of its rates: in this process, so each instance counts only what it serves. */
  readonly rates: Rates | undefined;
  /** Drains in force: several servers may share one context and stop one by one. */
  drains: number;
  /** When housekeeping last ran after a push, by space (see collect-garbage.ts). */
  readonly housekeeping: Map<string, number>;
  /** The key poke tokens are signed with, imported on first use (see server/poke-token.ts). */
  pokeKey: Promise<CryptoKey> | undefined;
  /** Told of each change committed through this context (the webhook runner, to deliver at once). */
  readonly changeListeners: Set<(space: string) => void>;
  /** With `changes`: the store's feed record set on, after the context's first commit (see feed-record.ts). */
  feedRecorded: Promise<void> | undefined;
  /** With an inspector: the live numbers it draws (pushes, pulls, pokes a second…), counted in this process. */
  readonly live: LiveStats | undefined;
  /** With an inspector: the door `handleRequest` sends `…/_inspect/…` to, set by the `createContext` of the package's entry (src/inspector/). */
  inspectorDoor: InspectorDoor | undefined;
}

/** Serves the inspector's requests: `base` is the path up to and including `/_inspect`. */
export type InspectorDoor = (request: Request, ctx: SyncContext, base: string) => Promise<Reply>;

/** How long idle client groups and tombstones are kept: see {@link SyncOptions.retention}. */
export interface RetentionOptions {
  /** Milliseconds a client group may neither push nor pull before it expires; `false`: for ever. Default: 30 days. */
  clientGroupsMs?: number | false;
  /** Milliseconds a deleted entry's tombstone is kept; `false`: for ever. Default: 30 days. */
  tombstonesMs?: number | false;
  /** Milliseconds the change log keeps a change for the feed and webhooks (see {@link SyncOptions.changes}); `false`: for ever. Default: 30 days. */
  changesMs?: number | false;
  /**
   * Milliseconds a space's history keeps a version (`at`, `readHistory`, `restoreSpace`,
   * `revertChanges`; see docs/history.md); `false`: for ever. History is the change log, so it is
   * kept for the longer of this and `changesMs` (the feed may then read further back too).
   * Default: `changesMs`.
   */
  historyMs?: number | false;
}

/** Which origins a browser may call from. */
export interface CorsOptions {
  /** `'*'`, a list of origins, or a test. */
  origin: '*' | readonly string[] | ((origin: string) => boolean);
  /** Milliseconds a browser may cache a preflight (sent in whole seconds). Default: 86,400,000 (a day). */
  maxAgeMs?: number;
}

/** Tells `ctx.onError` of a failure, the request made readable; a logger that throws is ignored. */
export function reportError(ctx: SyncContext, error: unknown, info: ErrorInfo): void {
  try {
    const request = info.request && fetchRequest(info.request);
    ctx.onError(error, request === info.request ? info : { ...info, request });
  } catch {
    // A broken logger must not turn a response into a crash.
  }
}
