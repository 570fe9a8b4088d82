import type { JSONValue } from '../../protocol/json.js';
import type { RangeRead, Storage, StorageTransaction } from '../../storage/types.js';
import { getMany } from '../../storage/write-buffer.js';
import { remember } from '../../base/remember.js';
import { setOwn } from '../../base/own.js';
import { sharedOnce } from '../batching/shared-derivations.js';
import { answerTo, compareCookies, isEmptyView, readCookie, sameCookie, type VersionCookie } from '../version/cookie.js';
import { encodeVersion, SpaceKeys, VERSION_FIELD } from '../version/keys.js';
import { changesSince, FIRST_PAGE, scanPages, viewPatch } from '../version/patch.js';
import { type ResetCursor, resetRest, resetStart, resumeAt } from '../version/reset-pages.js';
import { MAX_PAGES, orderTag, pageCookie, readPage } from '../version/page-cookie.js';
import type { GroupRecord, Meta, ViewRecord } from '../version/records.js';
import type { GroupRef, PullResult, ResolvedView, SessionClock, Strategy } from '../version/strategy.js';
import { isSigned, signature } from '../version/signature.js';
import { Prefixes, RULE } from '../version/prefixes.js';

/**
 * The pull half of the global version strategy (global-version.ts): what a client holding a
 * cookie needs to catch up, read in the session's transaction (a patch since its version, the
 * first page of a reset, or the next page of one), the view records a pull names, and the plan of
 * what a pull's first round trip can read before its session opens.
 */
export class GlobalPull {
  readonly #tx: StorageTransaction;
  readonly #keys: SpaceKeys;
  /** The space's meta record as read; undefined while it has none. */
  readonly #meta: Meta | undefined;
  readonly #clock: SessionClock;
  /** The record of the pulling group, read with the meta record; undefined when it has none (or there is no group). */
  readonly #group: GroupRecord | undefined;

  constructor(tx: StorageTransaction, keys: SpaceKeys, meta: Meta | undefined, clock: SessionClock, group: GroupRecord | undefined) {
    this.#tx = tx;
    this.#keys = keys;
    this.#meta = meta;
    this.#clock = clock;
    this.#group = group;
  }

  get #version(): number {
    return this.#meta?.version ?? 0;
  }

  /** See `SpaceSession.pull`. */
  async pull(
    cookie: JSONValue,
    group: GroupRef | undefined,
    view?: ResolvedView,
    waitIfAhead = false,
    order: () => readonly string[] = () => [],
  ): Promise<PullResult | 'ClientStateNotFound' | 'CookieAhead'> {
    // A page of a first sync in pages goes on where it left off, or, when it cannot, starts over.
    const held = readCookie(cookie);
    let firstPage = 0;
    if (held !== null && held !== 'foreign' && held.page !== undefined) {
      const resumed = await this.#resume(held, view, waitIfAhead, order);
      if (typeof resumed !== 'number') return resumed;
      firstPage = resumed;
    }
    const answer = answerTo(firstPage === 0 ? cookie : null, this.#meta, view, this.#clock.now);
    if (answer.ahead && waitIfAhead) return 'CookieAhead';
    // A group the store knew holds a version of commits it lost: the client may hold writes and
    // lastMutationIDs the store no longer has (a reset would lower them, which it refuses), so it
    // starts a new group. A new group (a reloaded page that forked the cookie) gets the reset.
    if (answer.lost && this.#group !== undefined) return 'ClientStateNotFound';
    // Signing runs off the main thread where the runtime can: let it overlap the reads below.
    const signing = this.#signed(answer.current);
    signing.catch(() => {});
    let { since, from } = answer;
    let viewRecord: PullResult['viewRecord'];
    if (view !== undefined) {
      // A cookie of another view than the caller's now: the patch deletes what that view held at
      // the cookie's version, so only a pair of view and version the server issued will do.
      const named = since !== 'reset' && from === undefined ? (readCookie(cookie) as VersionCookie) : undefined;
      const genuine = named === undefined || this.#meta?.secret === undefined || (await isSigned(this.#meta.secret, named));
      const recalled = await this.#recall(view, genuine ? named?.view : undefined);
      viewRecord = recalled.current;
      if (!genuine || recalled.old === 'lost') since = 'reset';
      else if (recalled.old !== undefined) from = recalled.old;
    }
    const current = await signing;
    // The client throws on a cookie lower than its own and drops a response whose cookie deeply
    // equals it, so such an answer would wedge it or be lost; only a new client group can recover.
    if (compareCookies(current, cookie) < 0 || (since === 'reset' && cookie !== null && sameCookie(current, cookie))) return 'ClientStateNotFound';

    // Pulls sharing a read (shared-derivations.ts) share each patch: keyed by all it depends on beyond
    // the snapshot, the view's name among it, so a patch of one user's view never reaches another.
    const tx = this.#tx;
    const keys = this.#keys;
    let patch =
      since === 'reset'
        ? 'reset'
        : view === undefined
          ? await sharedOnce(tx, `changes ${since}`, () => changesSince(tx, keys, since as number, this.#version))
          : await sharedOnce(tx, `view ${view.id} ${since} ${JSON.stringify(from!.list)}`, () =>
              viewPatch(tx, keys, { since: since as number, latest: this.#version, prefixIndexFrom: indexFrom(this.#meta) }, from!, view.prefixes),
            );
    let rest: ResetCursor | undefined;
    let tag: string | undefined;
    if (patch === 'reset') {
      since = 'reset';
      // Pulls that share a read share a reset only in the same order (it may be each user's own).
      const first = order();
      tag = await orderTag(first);
      ({ patch, rest } = await sharedOnce(tx, `reset ${view?.id ?? ''} ${tag ?? ''}`, () => resetStart(tx, keys, this.#version, view?.prefixes, first)));
    }
    const lastMutationIDChanges: Record<string, number> = {};
    // A lastMutationID changes with the version, so an up-to-date client has none to learn.
    if (group !== undefined && (since === 'reset' || since < this.#version)) {
      const prefix = this.#keys.lmidPrefix(group.userID, group.clientGroupID);
      const start = { key: prefix + encodeVersion((since === 'reset' ? 0 : since) + 1) };
      for await (const page of scanPages(this.#tx, { prefix, start })) {
        for (const [key, lmid] of page) {
          setOwn(lastMutationIDChanges, key.slice(prefix.length + VERSION_FIELD), lmid);
        }
      }
    }
    return { cookie: current, patch, lastMutationIDChanges, viewRecord, ...(rest && { rest: this.#rest(rest, current, firstPage, tag) }) };
  }

  /**
   * The answer to a page's cookie (page-cookie.ts): the next page, read as of the start's version,
   * when the start is still one a pull could answer from (of this space's epoch, its changes since
   * kept, under the caller's view, signed by this space, in the pull's `order` or in key order as
   * it began); else the number of the page a reset then starts at, so its pages' orders go on rising.
   */
  async #resume(
    cookie: VersionCookie,
    view: ResolvedView | undefined,
    waitIfAhead: boolean,
    chosen: () => readonly string[],
  ): Promise<PullResult | number | 'CookieAhead'> {
    const { start, cursor } = readPage(cookie as VersionCookie & { page: string })!;
    const over = cursor.number + 1;
    // The cursor numbers a range of the order it began in: another order's ranges are others.
    const order = cursor.order === undefined ? [] : chosen();
    if (cursor.order !== undefined && cursor.order !== (await orderTag(order))) return over;
    const secret = this.#meta?.secret;
    if (view !== undefined && secret !== undefined && !(await isSigned(secret, cookie))) return over;
    const answer = answerTo(start, this.#meta, view, this.#clock.now);
    // The pages' start is a commit the store does not show yet: not a reason to start them over.
    if (answer.ahead && waitIfAhead) return 'CookieAhead';
    if (answer.since === 'reset' || answer.lost || (view !== undefined && answer.from !== view.prefixes)) return over;
    // The last page ends with a pull from the start, which needs its view's record.
    if (view !== undefined && (await this.#recall(view, view.id)).old === 'lost') return over;
    const signed = await this.#signed(start);
    // A page of key order (all before orders existed) goes on in key order.
    const from = resumeAt(this.#keys, answer.since, view?.prefixes, order, cursor);
    return { cookie: signed, patch: [], lastMutationIDChanges: {}, rest: this.#rest(from, signed, over, cursor.order) };
  }

  /** What reads the rest of a reset from `cursor`: see `PullResult.rest`. Its pages are numbered from `page`, their cookies name the order by `tag`. */
  #rest(cursor: ResetCursor, start: VersionCookie, page: number, tag: string | undefined): NonNullable<PullResult['rest']> {
    const keys = this.#keys;
    return async function* (this: GlobalPull, storage: Storage, space: string, room?: () => number) {
      const stopped = yield* resetRest(storage, space, keys, cursor, page + 1 < MAX_PAGES ? room : undefined);
      return stopped && (await this.#signed(pageCookie(start, { number: page, range: stopped.range, after: stopped.after, order: tag })));
    }.bind(this);
  }

  /**
   * Reads, in one round trip, the current view's record (unless this process knows it is in the
   * store and recent) and, when the cookie names another view (`old`), that one's prefixes: what
   * the client holds. `'lost'` when that record is gone (housekeeping) or another user's.
   */
  async #recall(view: ResolvedView, old: string | undefined): Promise<{ current: PullResult['viewRecord']; old: Prefixes | 'lost' | undefined }> {
    // An empty space's cookie names no data: no later pull needs its view's record.
    const known = this.#version === 0 || (view.seen !== undefined && this.#clock.now - view.seen < this.#clock.touchEveryMs);
    const wanted = [...(known ? [] : [view.id]), ...(old === undefined ? [] : [old])];
    const records =
      wanted.length === 0
        ? []
        : ((await getMany(
            this.#tx,
            wanted.map((id) => this.#keys.view(id)),
          )) as Array<ViewRecord | undefined>);
    const record = old === undefined ? undefined : records.at(-1);
    return {
      current: known ? undefined : { used: records[0]?.used },
      old:
        old === undefined
          ? undefined
          : record === undefined || record.user !== (view.userID ?? null) || record.rule !== RULE
            ? 'lost'
            : Prefixes.canonical(record.prefixes),
    };
  }

  /** `cookie` with its signature, when it names a view and the space has a secret. */
  async #signed(cookie: VersionCookie): Promise<VersionCookie> {
    const secret = this.#meta?.secret;
    return cookie.view === undefined || secret === undefined ? cookie : { ...cookie, sig: await signature(secret, cookie) };
  }

  /** See `SpaceSession.keepView`. */
  async keepView(view: ResolvedView, used: number | undefined): Promise<void> {
    const keys = this.#keys;
    const now = this.#clock.now;
    if (used !== undefined) await this.#tx.del(keys.viewUse(used, view.id));
    await this.#tx.put(keys.view(view.id), { user: view.userID ?? null, prefixes: [...view.prefixes.list], rule: RULE, used: now } satisfies ViewRecord);
    await this.#tx.put(keys.viewUse(now, view.id), null);
  }
}

/** What a pull of `cookie` reads in its first round trip, before its session opens (see `Strategy.pullPlan`); undefined when it cannot tell. */
export const planPull: Strategy['pullPlan'] = (space, cookie, who) => {
  const parsed = readCookie(cookie);
  // A full pull (or a reset) reads every entry: nothing to guess.
  if (parsed === null || parsed === 'foreign' || parsed.view !== undefined || parsed.page !== undefined) return undefined;
  // The version a cookie stands for is its order less the space's base: known once a session
  // of its epoch was read here (the base never changes within an epoch).
  const base = isEmptyView(parsed) ? 0 : bases.get(parsed.epoch!);
  if (base === undefined) return undefined;
  const since = isEmptyView(parsed) ? 0 : parsed.order - base;
  if (since < 0) return undefined;
  const keys = new SpaceKeys(space);
  const after = encodeVersion(since + 1);
  const changes: RangeRead = {
    prefix: keys.versionPrefix,
    start: { key: keys.versionPrefix + after },
    limit: FIRST_PAGE,
    join: { prefix: keys.entryPrefix, skip: VERSION_FIELD },
  };
  if ('clientID' in who) return { gets: [keys.meta, keys.client(who.userID, who.clientID)], scans: [changes] };
  const lmids = keys.lmidPrefix(who.userID, who.clientGroupID);
  return {
    gets: [keys.meta, keys.group(who.userID, who.clientGroupID)],
    scans: [changes, { prefix: lmids, start: { key: lmids + after }, limit: FIRST_PAGE }],
  };
};

/**
 * The base of each space epoch this process has read (see cookie.ts), so that a pull's plan
 * knows which version its cookie stands for. An epoch is random and its base never changes, so
 * one map serves every store; it keeps the latest few thousand.
 */
const bases = new Map<string, number>();
const BASES_KEPT = 10_000;

/** Notes the base of `meta`'s epoch, for later plans ({@link planPull}). */
export function rememberBase({ epoch, base }: Meta): void {
  if (bases.get(epoch) !== base) remember(bases, epoch, base, BASES_KEPT);
}

/** From which version the prefix index holds every change, if the last write kept it. */
function indexFrom(meta: Meta | undefined): number | undefined {
  return meta?.indexedAt !== undefined && meta.indexedAt === meta.version ? meta.indexFrom : undefined;
}
