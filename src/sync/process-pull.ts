import type { PullRequest } from '../protocol/pull-request.js';
import type { ClientStateNotFoundResponse, PullResponseV0, PullResponseV1 } from '../protocol/pull-response.js';
import { HTTPError, TemporaryError } from '../base/errors.js';
import type { Storage, StorageTransaction } from '../storage/types.js';
import type { ReadPlan } from './batching/prefetched-read.js';
import type { Limits } from './transactions/limits.js';
import { SpaceReadTransaction, type SpaceReader } from './transactions/read-transaction.js';
import type { IndexDefinitions } from './version/indexes.js';
import type { Patch } from './version/patch.js';
import { readAlone, readBatched } from './batching/shared-reads.js';
import type { GroupRef, PullResult, ResolvedView, SessionClock, SpaceSession } from './version/strategy.js';
import { setOwn } from '../base/own.js';
import { globalVersion as strategy } from './session/global-version.js';
import { RecentViews, type View, type ViewRequest, viewID } from './view.js';
import { Prefixes } from './version/prefixes.js';
import { within } from '../base/within.js';
import { ViewInterest, ViewReads } from './interest.js';
import type { Downgrade } from './schema/downgrade.js';
import type { FirstSyncOrderRequest } from './first-sync-order.js';

/**
 * A pull's answer before it is serialised: a patch's puts may hold their value as text. A reset
 * of a large space is sent as it is read (`rest`): `patch` is its start, and the other fields
 * are those of the answer's start, until `rest` returns the final ones.
 */
export type PullAnswer = Answered<PullResponseV1> | Answered<PullResponseV0> | ClientStateNotFoundResponse;
type Answered<T> = Omit<T, 'patch'> & { patch: Patch; rest?: AsyncGenerator<Patch, PullEnd, undefined> };
/** The fields of a pull's answer other than its patch. */
export type PullEnd = Omit<PullResponseV1, 'patch'> | Omit<PullResponseV0, 'patch'>;

/** What {@link processPull} answers from: the pull, whose it is, and how to read. */
export interface PullOptions {
  storage: Storage;
  pull: PullRequest;
  space: string;
  userID: string | undefined;
  clock: SessionClock;
  /** The context's view and the limits it is held to, when there is one. */
  views?: { view: View; limits: Pick<Limits, 'keyBytes' | 'viewPrefixes' | 'appCodeMs'>; indexes?: IndexDefinitions | undefined } | undefined;
  /** Share one read with the pulls of the space that arrive together (see batching/shared-reads.ts). Default: true. */
  shareReads?: boolean;
  /** Told what the answer depends on, when there is a view: see {@link ViewInterest}. */
  onInterest?: (interest: ViewInterest) => void;
  /**
   * A first sync in pages (version 1 pulls): a reset read as it is sent stops once its answer
   * used up the `room` (characters it may still send), with the cookie of a page, and `paged` is
   * called once that answer is whole. `order` tells which prefixes such a reset sends first (it
   * throws nothing: see handle-pull.ts).
   */
  paging?: { room: () => number; paged: () => void; order?: ((request: FirstSyncOrderRequest) => readonly string[]) | undefined } | undefined;
  /** The pull is of an older schema version that reads entries in its own shape: each patch goes through this (schema/downgrade.ts). */
  downgrade?: Downgrade | undefined;
}

/**
 * Answers a pull of either version from one read-only transaction, so the lastMutationIDs are
 * read with the patch they belong to (spec, pull rule 2). Client groups and clients are the
 * caller's own (spec, authentication rule 3): another user's of the same ID are not seen.
 */
export async function processPull(options: PullOptions): Promise<PullAnswer> {
  const { answer, rest, prefixes } = await readAndSettle(options);
  if (rest === undefined || 'error' in answer) return answer;
  // A reset too large for one answer is sent as it is read, and ends with what changed meanwhile.
  return { ...answer, rest: sendReset(options, answer, rest, prefixes) };
}

/**
 * A pull's read and what follows it: the read (again, while the cookie may name a commit the
 * store does not show yet), then the writes it found due: the view's record, the group's activity.
 */
async function readAndSettle(options: PullOptions): Promise<PullRead> {
  const { storage, pull, space, userID, clock, views, onInterest } = options;
  // Until when a cookie that may be ahead of what the store shows is worth reading again for (Storage.catchUpMs).
  const waitUntil = Date.now() + (storage.catchUpMs ?? 0);
  // On a store over a network (one with readMany), a pull that can tell what it will read (no
  // view, a cookie of a space seen before) reads it in one go, one statement on a database.
  const who = pull.pullVersion === 1 ? { userID, clientGroupID: pull.clientGroupID } : { userID, clientID: pull.clientID };
  const plan = views === undefined && storage.readMany !== undefined ? strategy.pullPlan?.(space, pull.cookie, who) : undefined;
  let read = await readOnce(options, waitUntil, plan);
  // The client may have read a commit this read does not show yet (a standby showed it before
  // its primary): read again, a little later each time, until `waitUntil`; the read after that
  // answers whatever it finds.
  for (let pause = FIRST_CATCH_UP_PAUSE; read.after.ahead === true; pause *= 2) {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(pause, waitUntil - Date.now()))));
    read = await readOnce(options, waitUntil, plan);
  }
  const { answer, after } = read;
  const { keep, fresh } = after;
  if (after.interest !== undefined && !('error' in answer)) onInterest?.(after.interest);
  if (!('error' in answer)) {
    // The cookie names a view whose record is missing or old: write it before the client holds it.
    if (keep !== undefined) {
      const { view, used } = keep;
      // The view's record is the space's data: no webhook's delivery holds it up.
      await storage.transaction(async (tx) => (await strategy.open(tx, space, clock)).keepView(view, used), { readOnly: false, space, lane: 'data' });
      recentViews.set(storage, space, view.id, clock.now);
    } else if (fresh !== undefined) recentViews.set(storage, space, fresh.view.id, fresh.used);
  }
  // A group that only pulls is active too: refresh its record, rarely, outside the read.
  if (after.stale === true && pull.pullVersion === 1) await touch(storage, space, userID, pull.clientGroupID, clock, pull.schemaVersion);
  return read;
}

/** One read of a pull. Pulls arriving together share one (shared-reads.ts): a poke storm costs one read, not one each. */
function readOnce(options: PullOptions, waitUntil: number, plan: ReadPlan | undefined): Promise<PullRead> {
  const { storage, space, shareReads = true } = options;
  // A store may run the read more than once: each attempt finds (and returns) its own.
  return (shareReads ? readBatched : readAlone)(storage, space, (tx) => readPull(tx, options, waitUntil), plan);
}

/** A pull answered from `tx`: the caller's view resolved, its group or client looked up, the session asked. */
async function readPull(tx: StorageTransaction, options: PullOptions, waitUntil: number): Promise<PullRead> {
  const { storage, pull, space, userID, clock, views, onInterest } = options;
  const after: AfterRead = {};
  const group = pull.pullVersion === 1 ? { userID, clientGroupID: pull.clientGroupID } : undefined;
  const clientGroupID = pull.pullVersion === 1 ? pull.clientGroupID : pull.clientID;
  // The view's reads need nothing the session reads first: on a database they go out together.
  const [session, view] = await Promise.all([
    strategy.open(tx, space, clock, group),
    views && resolveView(strategy.reader(tx, space, { indexes: views.indexes }), views.view, { userID, clientGroupID }, views.limits, onInterest !== undefined),
  ]);
  if (view !== undefined) {
    view.seen = recentViews.get(storage, space, view.id);
    if (view.reads?.kept) after.interest = new ViewInterest(view.prefixes, view.reads);
  }
  const asked: Asked = { session, view, clientGroupID, waitUntil, after };
  if (pull.pullVersion === 1) {
    const seen = await session.groupSeen(userID, pull.clientGroupID);
    // Housekeeping removed the group's clients: the client starts a new group.
    if (seen === 'expired') return { answer: { error: 'ClientStateNotFound' }, after };
    after.stale = seen !== undefined && clock.now - seen >= clock.touchEveryMs;
    const result = await askSession(options, asked, group);
    if (result === 'ClientStateNotFound') return { answer: { error: result }, after };
    const { cookie, lastMutationIDChanges, patch, rest } = result;
    return { answer: { cookie, lastMutationIDChanges, patch }, rest, prefixes: view?.prefixes, after };
  }

  const client = await session.getClient(userID, pull.clientID);
  // Forgotten by housekeeping, not lost: the deprecated form of ClientStateNotFound (spec,
  // pull responses of version 0) makes the client start over.
  if (client === undefined && pull.lastMutationID > 0 && session.hasExpiredGroups) return { answer: { error: 'ClientStateNotFound' }, after };
  if (client === undefined && pull.lastMutationID > 0) {
    // Spec, pull rule 7: only a new client is unknown; one that saw mutations processed means
    // data was deleted, and the spec's answer is to abort with a 500.
    throw new HTTPError(500, `Client ${JSON.stringify(pull.clientID)} claims lastMutationID ${pull.lastMutationID} but the server has no record of it`);
  }
  const result = await askSession(options, asked, undefined);
  if (result === 'ClientStateNotFound') return { answer: { error: result }, after };
  const { cookie, patch, rest } = result;
  return { answer: { cookie, lastMutationID: client?.lastMutationID ?? 0, patch }, rest, prefixes: view?.prefixes, after };
}

/** The session's answer to the pull's cookie, in the shape the pull's schema version reads, noting in `after` what is to be written after the read. */
async function askSession(
  { pull, userID, clock, paging, downgrade }: PullOptions,
  { session, view, clientGroupID, waitUntil, after }: Asked,
  group: GroupRef | undefined,
): Promise<PullResult | 'ClientStateNotFound'> {
  // Asked for only by a reset or a page: most pulls are neither.
  const order =
    pull.pullVersion === 1 && paging?.order !== undefined
      ? askedOnce(paging.order, { userID, clientGroupID, view: view && [...view.prefixes.list] })
      : undefined;
  const pulled = await session.pull(pull.cookie, group, view, Date.now() < waitUntil, order);
  // Never sent: the pull reads again (readAndSettle), at last without waiting.
  if (pulled === 'CookieAhead') after.ahead = true;
  const result = pulled === 'CookieAhead' ? 'ClientStateNotFound' : pulled;
  // An older version's clients hold entries in their shape: computed in this snapshot, so they go with its lastMutationIDs.
  if (downgrade !== undefined && result !== 'ClientStateNotFound')
    result.patch = await downgrade.patch(result.patch, (keys) => session.getMany(keys), coverOf(view?.prefixes));
  const record = result !== 'ClientStateNotFound' ? result.viewRecord : undefined;
  if (record !== undefined) {
    const { used } = record;
    if (used === undefined || clock.now - used >= clock.touchEveryMs) after.keep = { view: view!, used };
    else after.fresh = { view: view!, used };
  }
  return result;
}

/**
 * The rest of a reset, read as it is sent, then what changed meanwhile: the answer of a pull
 * from the cookie of the reset's start, whose lastMutationIDs are the latest (spec, pull rule 2:
 * they go with the patch's last snapshot). When that pull cannot follow on (the space was
 * replaced or lost the history since, the group expired, the view changed under the pages
 * read), the answer breaks off: the client drops it and pulls again.
 */
async function* sendReset(
  options: PullOptions,
  start: Answered<PullResponseV1> | Answered<PullResponseV0>,
  rest: NonNullable<PullResult['rest']>,
  prefixes: Prefixes | undefined,
): AsyncGenerator<Patch, PullEnd, undefined> {
  const { storage, space, paging, downgrade } = options;
  const { cookie } = start;
  const lastMutationIDChanges = 'lastMutationIDChanges' in start ? start.lastMutationIDChanges : undefined;
  // Pages for version 1 only, whose answers carry lastMutationIDChanges.
  const paged = lastMutationIDChanges && paging;
  const pages = rest(storage, space, paged?.room);
  const page = yield* downgrade === undefined ? pages : downgradedPages(downgrade, pages, storage, space, coverOf(prefixes));
  if (page !== undefined) {
    // A page of a first sync in pages: its client pulls the next when poked.
    paged!.paged();
    return { cookie: page, lastMutationIDChanges: lastMutationIDChanges! };
  }
  // The reset's last step: a pull from its start's cookie (never itself in pages), read and settled as any.
  const end = await readAndSettle({ ...options, pull: { ...options.pull, cookie }, paging: undefined });
  const answer = end.answer;
  if ('error' in answer || end.rest !== undefined || answer.patch[0]?.op === 'clear') {
    throw new TemporaryError('The space changed too much while a full pull was sent (it was replaced, or lost the changes since); pull again', {
      retryAfterSeconds: 1,
    });
  }
  if (answer.patch.length > 0) yield answer.patch;
  if (!('lastMutationIDChanges' in answer)) return { cookie: answer.cookie, lastMutationID: answer.lastMutationID };
  // Those the start read, less what changed since; set by key, as a client ID may be `__proto__`.
  const latest: Record<string, number> = {};
  for (const lmids of [lastMutationIDChanges!, answer.lastMutationIDChanges])
    for (const [clientID, lmid] of Object.entries(lmids)) setOwn(latest, clientID, lmid);
  return { cookie: answer.cookie, lastMutationIDChanges: latest };
}

/** What one read of a pull found: its answer (a reset sent as it is read: its start, and the session's reader of the `rest`), the view's prefixes, and what to write after it. */
interface PullRead {
  answer: PullAnswer;
  rest?: PullResult['rest'];
  prefixes?: Prefixes | undefined;
  after: AfterRead;
}

/** What a read asks the session with: the session, the caller's view, its group (or v0 client), and until when a cookie ahead is read again. */
interface Asked {
  session: SpaceSession;
  view: (ResolvedView & { reads?: ViewReads }) | undefined;
  clientGroupID: string;
  waitUntil: number;
  after: AfterRead;
}

/** `order` asked once, when first needed, for `request`. */
function askedOnce(order: (request: FirstSyncOrderRequest) => readonly string[], request: FirstSyncOrderRequest): () => readonly string[] {
  let chosen: readonly string[] | undefined;
  return () => (chosen ??= order(request));
}

/** Whether a key is under `prefixes` (undefined without a view: every key is). */
function coverOf(prefixes: Prefixes | undefined): ((key: string) => boolean) | undefined {
  return prefixes && ((key: string) => prefixes.covers(key));
}

/**
 * The pages of a reset as an older version's clients hold them, each computed in a read of its
 * own: at or after the reset's start, and what changed meanwhile is computed again at the end (a
 * pull from the start), so the answer ends consistent. With a view, the pages hold only the
 * entries under it; an old key's value reading one outside it reads none (`covered` false).
 */
async function* downgradedPages<R>(
  downgrade: Downgrade,
  pages: AsyncGenerator<Patch, R, undefined>,
  storage: Storage,
  space: string,
  covers: ((key: string) => boolean) | undefined,
): AsyncGenerator<Patch, R, undefined> {
  for (;;) {
    const next = await pages.next();
    if (next.done === true) return next.value;
    yield await storage.transaction(
      (tx) => {
        const reader = strategy.reader(tx, space);
        return downgrade.patch(next.value, (keys) => Promise.all(keys.map((key) => reader.get(key))), covers);
      },
      { readOnly: true, space },
    );
  }
}

/**
 * What a pull's read found to write after it: its view record (`keep`, or `fresh`: recent
 * enough), and whether its group's activity is due (`stale`); and whether its cookie was ahead of
 * what it read (`ahead`: worth reading again, see `Storage.catchUpMs`).
 */
interface AfterRead {
  ahead?: boolean;
  interest?: ViewInterest;
  keep?: { view: ResolvedView; used: number | undefined };
  fresh?: { view: ResolvedView; used: number };
  stale?: boolean;
}

const recentViews = new RecentViews();

/** The first pause before a pull whose cookie was ahead reads again; each next one is twice as long. */
const FIRST_CATCH_UP_PAUSE = 10;

/**
 * The prefixes `view` gives the caller, read through the pull's own snapshot, and their name.
 * A view that runs past `limits.appCodeMs` fails the pull as a `TemporaryError` (503): it holds
 * a snapshot, which on some stores holds up the space's commits.
 */
async function resolveView(
  session: SpaceReader,
  view: View,
  request: ViewRequest,
  limits: Pick<Limits, 'keyBytes' | 'viewPrefixes' | 'appCodeMs'>,
  record: boolean,
): Promise<ResolvedView & { reads?: ViewReads }> {
  // What the view reads is part of what its answer depends on (its pokes are filtered by it),
  // when a poke hub will ask.
  const reads = record ? new ViewReads() : undefined;
  const recording: SpaceReader | undefined = reads && {
    get: (key) => (reads.get(key), session.get(key)),
    scan: (prefix, start) => (reads.scan(prefix), session.scan(prefix, start)),
    // A change of the index's rows under a secondary key is told to pokes as `indexTouch`.
    scanIndex: (name, prefix, start, keysOnly) => reads.indexScan(name, prefix, start, session.scanIndex!(name, prefix, start, keysOnly)),
  };
  const tx = new SpaceReadTransaction(recording ?? session, limits);
  try {
    // Past the deadline, what the view does next (a read of the closed tx throws) is nobody's.
    const computed = (async () => Prefixes.of(await view(tx, request), limits))();
    const prefixes = await within(
      computed,
      limits.appCodeMs,
      () => new TemporaryError(`view ran longer than ${limits.appCodeMs} ms (limits.appCodeMs)`, { retryAfterSeconds: 1 }),
    );
    return { id: await viewID(request.userID, prefixes), prefixes, userID: request.userID, ...(reads && { reads }) };
  } finally {
    tx.close();
  }
}

/** Records a group's activity in a write transaction of its own, unless it expired meanwhile. */
async function touch(
  storage: Storage,
  space: string,
  userID: string | undefined,
  clientGroupID: string,
  clock: SessionClock,
  schemaVersion: string,
): Promise<void> {
  await storage.transaction(
    async (tx) => {
      const session = await strategy.open(tx, space, clock);
      const seen = await session.groupSeen(userID, clientGroupID);
      if (seen !== 'expired') await session.touchGroup(userID, clientGroupID, seen, schemaVersion);
    },
    { readOnly: false, space, lane: 'data' },
  );
}
