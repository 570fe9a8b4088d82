/**
 * The inspector's JSON API, as its page reads it: every answer of `<base>/api/…` (where `<base>`
 * is the path ending in `/_inspect` the page is served under). One place for the shapes, so the
 * server (api.ts) and the page (ui/app.js and the modules it imports, which read them) agree on them.
 *
 * Every request needs the session cookie (auth.ts); every POST also a JSON body, and an Origin of
 * the server's own (csrf.ts). An error answers `{error: string}` with a 4xx status (or 500).
 */
import type { GroupSummary, SpaceSummary } from '../backend/inspect.js';
import type { KeptRejection } from '../sync/schema/rejected.js';
import type { MoveState } from '../backend/move.js';
export type { MoveState };
import type { FeedChange } from '../sync/feed/feed-pages.js';
import type { LoggedChange } from '../sync/history/log-reads.js';
import type { RestoreResult, RevertResult } from '../backend/history.js';
import type { JSONValue } from '../protocol/json.js';
import type { RevertCause } from '../sync/version/records.js';
import type { SpaceMigration } from '../backend/migrate.js';

/** `GET api/overview`: what this server keeps, so the page shows only what exists. */
export interface Overview {
  /** Actions (webhook enable and replay, restore, revert) are refused: the page shows none. */
  readOnly: boolean;
  /** The context has a `view`: "view as a user" works. */
  view: boolean;
  /** The change log is kept: the context's `changes` or `history`, or the store's feed is on (every writer keeps it then). */
  changes: boolean;
  /** The context keeps history with checkpoints (`history`); without it, history reads (as of a version, restore, revert) still reach as far as the change log does. */
  history: boolean;
  /** The webhooks' names, in the order given. */
  webhooks: string[];
  /** The routed storage's store names, when the storage is routed. */
  stores?: string[];
  /** The live numbers are this process's alone (each instance counts its own). */
  process: { pid: number | null; startedAt: number };
}

/** What a space's record says (read without counting its rows), and where it lives. */
export interface SpaceRecord {
  space: string;
  version: number;
  /** Live entries, their bytes and the bytes of its history, as every write keeps them (absent in a space no write reached since viewsync kept them). */
  entries?: number;
  bytes?: number;
  history?: number;
  quota?: SpaceSummary['quota'];
  /** On a routed storage: the store that holds the copy in use. */
  store?: string;
  /** A move of the space in progress: its step (route-record.ts), from where to where, and its copy's progress. */
  move?: MoveState;
}

/** One row of `GET api/spaces`. */
export interface SpaceRow extends SpaceRecord {
  /** Pushes and pulls of the space this process answered in the last minute. */
  activity: { pushes: number; pulls: number };
}

/** `GET api/spaces?prefix=&after=&limit=`: a page of spaces in name order. */
export interface SpacesPage {
  spaces: SpaceRow[];
  /** Read on with `after=next`; absent on the last page. */
  next?: string;
}

/**
 * `GET api/space?space=`: one space, as `inspect(ctx, space)` tells it but read in bounded steps:
 * its counts from its record, its first 1,000 client groups, its change log's start and
 * checkpoints (not its rows).
 */
export interface SpacePage extends SpaceRecord {
  /** Client groups listed that are not expired. */
  clientGroups: number;
  /** The latest time a listed client group was recorded active, or null. */
  lastActivity: number | null;
  groups: GroupSummary[];
  /** More client groups (or clients) than listed: the first 1,000 groups, and their clients among the first 10,000, are. */
  groupsCut: boolean;
  /** Unfinished imports' staging areas: when each began. */
  staging: Array<{ started: number }>;
  /** The change log: the version after which it is whole (null: not whole now), its oldest row's time, and the history's checkpoints. */
  changes?: { from: number | null; oldest: number | null; checkpoints: Array<{ version: number; done: boolean }> };
  schemaVersions?: Record<string, number>;
  rejected?: number;
  rejectedMutations: KeptRejection[];
  migrations?: Record<string, SpaceMigration>;
}

/** One entry of a key browser page: the value, cut to a preview when it is long. */
export interface KeyRow {
  key: string;
  /** The value as JSON text, at most 1,000 characters (`cut` when it was longer). */
  json: string;
  cut: boolean;
  /** Bytes of its JSON text, in UTF-8. */
  bytes: number;
}

/** `GET api/keys?space=&prefix=&after=&limit=&version=`: a page of a space's entries, now or as of a version kept in history. */
export interface KeysPage {
  /** The version read: the space's now, or the one asked for. */
  version: number;
  entries: KeyRow[];
  next?: string;
}

/** `GET api/key?space=&key=&before=`: one key's value now and its last 50 changes before version `before` (default: all kept), newest first. */
export interface KeyPage {
  key: string;
  /** Its value now; absent when the key does not exist. */
  value?: JSONValue;
  /** Its changes, newest first; `older`: there are older ones kept (read them with `before` the last one's version). */
  history?: { changes: LoggedChange[]; kept: { from: number; to: number }; older: boolean };
  /** Why there is no history: no log kept, or the log was cut. */
  noHistory?: string;
}

/** One entry as a user's view sees it. */
export interface ViewedKey {
  key: string;
  /** Whether a pull of this user gets it. */
  received: boolean;
  /** The view's prefix that covers it; absent when none does. */
  because?: string;
}

/** `GET api/view-as?space=&user=&group=&prefix=&after=&limit=`: what a user's view yields and which keys it lets through. */
export interface ViewAsPage {
  userID: string | null;
  clientGroupID: string;
  /** The prefixes the view returned, in canonical form (none covering another); `['']`: the whole space. */
  prefixes: string[];
  /** The view threw: its message (a pull of this user is refused with it). */
  refused?: string;
  /** A page of the space's keys, each received or not, and why. */
  entries: ViewedKey[];
  next?: string;
  /** Of the page's entries: how many the user receives. */
  received: number;
}

/** A second of the live numbers. */
export interface LiveSecond {
  /** The second's start, ms since the epoch. */
  t: number;
  pushes: number;
  pulls: number;
  pokes: number;
  mutations: number;
  /** Requests answered 5xx. */
  errors: number;
  /** Requests refused 429 (rates). */
  refusals: number;
}

/** Latency percentiles in milliseconds over the last minute; null when nothing was timed. */
export interface Percentiles {
  p50: number | null;
  p90: number | null;
  p99: number | null;
  count: number;
}

/** `GET api/live`: the last 60 seconds of this process, a second at a time, oldest first. */
export interface LivePage {
  now: number;
  seconds: LiveSecond[];
  latency: { push: Percentiles; pull: Percentiles };
}

/** `GET api/feed?space=&after=`: the change feed of a space; no `after`: its last changes (tail). */
export interface FeedTail {
  changes: FeedChange[];
  cursor: string;
  more: boolean;
  version: number;
}

/** `GET api/webhooks?space=`: each webhook's state in a space. */
export interface WebhooksPage {
  /** `url`: absent for a webhook this context does not name (one the store holds a state of). */
  webhooks: Array<{ name: string; url?: string; state?: NonNullable<SpaceSummary['webhooks']>[string] }>;
}

/** `GET api/migrations?space=`: the data migrations that ran in a space. */
export interface MigrationsPage {
  migrations: Record<string, SpaceMigration>;
}

/** `POST api/webhooks/enable` `{name, space}`. */
export interface EnableBody {
  name: string;
  space: string;
}

/** `POST api/webhooks/replay` `{name, space, delivery}` or `{name, space, from, to}` (cursors). */
export type ReplayBody = { name: string; space: string } & ({ delivery: string } | { from: string; to: string });

/** `POST api/restore` `{space, to, prefix?, dryRun}`. */
export interface RestoreBody {
  space: string;
  to: number;
  prefix?: string;
  dryRun: boolean;
}

/** `POST api/revert` `{space, cause, onConflict?, dryRun}`. */
export interface RevertBody {
  space: string;
  cause: RevertCause;
  onConflict?: 'skip' | 'overwrite' | 'stop';
  dryRun: boolean;
}

/** What an action answers: what it did (or would do), as its backend call returned it. */
export interface ActionResult<T = EnableResult | ReplayResult | RestoreAnswer | RevertAnswer> {
  ok: true;
  result: T;
}

/** `webhooks/enable`: whether the webhook was disabled. */
export interface EnableResult {
  wasDisabled: boolean;
}

/** `webhooks/replay`: how many deliveries were queued (the processes that deliver the webhook send them). */
export interface ReplayResult {
  queued: number;
}

/** `restore`: `restoreSpace`'s result, its changes cut to the first 1,000; `total`: how many there were. */
export type RestoreAnswer = RestoreResult & { total: number };

/** `revert`: `revertChanges`'s result, its changes cut to the first 1,000; `total`: how many there were. */
export type RevertAnswer = RevertResult & { total: number };
