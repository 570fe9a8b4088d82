import type { JSONValue } from '../../protocol/json.js';
import type { StorageTransaction } from '../../storage/types.js';
import { getMany } from '../../storage/write-buffer.js';
import { orderBase } from '../version/cookie.js';
import { collectSpace } from './housekeeping.js';
import { GlobalPull, planPull, rememberBase } from './global-pull.js';
import { bucketOf, SpaceKeys } from '../version/keys.js';
import { IndexRows } from '../version/index-rows.js';
import { live, scanPages } from '../version/patch.js';
import type { ChangeOrigin, Entry, GroupRecord, Meta, RejectedMutation, StoredClient } from '../version/records.js';
import { utf8Length } from '../../base/utf8.js';
import { entryBytes, valueBytes } from '../transactions/quota.js';
import { countHistory, logRowBytes, originBytes, tombstoneBytes } from '../history/history-bytes.js';
import type { ClientRecord, GroupRef, PullResult, ResolvedView, SessionClock, SessionOptions, SpaceSession, Strategy, Usage } from '../version/strategy.js';
import { newSecret } from '../version/signature.js';
import { keptGaps, skipTo } from '../version/skipped-versions.js';
import { ChangeLog, feedFrom } from '../feed/change-log.js';
import { type LogDecision, logDecision } from '../feed/feed-record.js';
import { keptRecord, MAX_REJECTED, REJECTED_TOPIC } from '../schema/rejected.js';
import { toStored } from '../../storage/records.js';

/**
 * The global version strategy (spec, "Global version number strategy"), one version per space.
 * A push reads the space's version inside its transaction, stamps every change with the next
 * one and stores it on commit; the store's serialisable writes make that the serialised
 * version the spec asks for, never a clock or a sequence. Deletes leave tombstones, and a version
 * index lets a pull read only what changed since its cookie.
 */
export const globalVersion: Strategy = {
  async open(tx, space, clock, group, options = {}) {
    const keys = new SpaceKeys(space);
    if (group === undefined) {
      // A write reads the store's incarnation with the meta record (on PostgreSQL it came with the space's lock).
      const [meta, incarnation] = await Promise.all([tx.get(keys.meta) as Promise<Meta | undefined>, tx.incarnation?.()]);
      // The context's feed keeps the log; else the data says (feed-record.ts).
      const log = options.leaveLog ? 'leave' : options.feed ? 'keep' : await logDecision(tx, meta);
      return new GlobalVersionSession(tx, keys, meta, clock, options, undefined, incarnation, log);
    }
    // A pull reads both first: one round trip on a database, not two.
    const groupKey = keys.group(group.userID, group.clientGroupID);
    const [meta, record] = (await getMany(tx, [keys.meta, groupKey])) as [Meta | undefined, GroupRecord | undefined];
    return new GlobalVersionSession(tx, keys, meta, clock, options, { key: groupKey, record });
  },
  pullPlan: planPull,
  reader(tx, space, options = {}) {
    return new GlobalVersionSession(tx, new SpaceKeys(space), undefined, { now: 0, touchEveryMs: Infinity }, options);
  },
  pushReads(space, userID, clientGroupID, clientIDs) {
    const keys = new SpaceKeys(space);
    return [keys.meta, keys.group(userID, clientGroupID), ...[...new Set(clientIDs)].map((clientID) => keys.client(userID, clientID))];
  },
  collect: collectSpace,
};

/**
 * One space seen from inside one storage transaction: reads of its live entries, writes stamped
 * with the next version and counted (usage, history, indexes, the change log), clients and groups,
 * and the commit that makes them visible. Its pulls are read by {@link GlobalPull} (global-pull.ts).
 */
class GlobalVersionSession implements SpaceSession {
  readonly #tx: StorageTransaction;
  readonly #keys: SpaceKeys;
  /** The space's meta record as committed; undefined until its first change. */
  #meta: Meta | undefined;
  readonly #clock: SessionClock;
  /** A group record read with the meta record, when the session was opened for a group. */
  readonly #read: { key: string; record: GroupRecord | undefined } | undefined;
  /** Whether this session's changes go into the prefix index too. */
  readonly #prefixIndex: boolean;
  readonly #maxKeyBytes: number | undefined;
  /** The rows of the indexes views read, kept by this session's writes (see indexes.ts). */
  readonly #indexRows: IndexRows;
  /** What the space holds, kept up to date by every write; undefined until counted in a space older than the counters. */
  #usage: Omit<Usage, 'history'> | undefined;
  /** The bytes of its history (see quota.ts), kept up to date by every write; undefined until counted in a space older than the counter. */
  #history: number | undefined;
  #changed = false;
  /** The rejected mutations this session kept (see rejected.ts), numbering their rows. */
  #rejected = 0;
  /** The keys this session wrote, up to {@link MAX_TOUCHED}; undefined past it (see {@link touched}). */
  #touched: Set<string> | undefined = new Set();
  /** The store's incarnation, in a write (see `StorageTransaction.incarnation`). */
  readonly #incarnation: string | undefined;
  /** The version this session's changes take when it skips ahead (see {@link skipTo}). */
  #skipTo: number | undefined;
  /** The change log, written while the feed is on (see change-log.ts). */
  readonly #log: ChangeLog | undefined;
  /** The log's current origin and its bytes (see {@link logRowBytes}). */
  #origin: [ChangeOrigin, number] | undefined;
  /** The store's feed is off and this space's log was broken: its commit marks the space off (see feed-record.ts). */
  readonly #markOff: boolean;

  constructor(
    tx: StorageTransaction,
    keys: SpaceKeys,
    meta: Meta | undefined,
    clock: SessionClock,
    options: SessionOptions,
    read?: { key: string; record: GroupRecord | undefined },
    incarnation?: string,
    log: LogDecision = 'leave',
  ) {
    this.#tx = tx;
    this.#keys = keys;
    this.#meta = meta;
    this.#clock = clock;
    this.#prefixIndex = options.prefixIndex ?? false;
    this.#maxKeyBytes = options.maxKeyBytes;
    this.#indexRows = new IndexRows(tx, keys, options.indexes ?? {}, options.maxKeyBytes, this);
    this.#read = read;
    this.#usage = meta === undefined ? { entries: 0, bytes: 0 } : meta.entries === undefined ? undefined : { entries: meta.entries, bytes: meta.bytes ?? 0 };
    this.#history = meta === undefined ? 0 : meta.history;
    if (meta !== undefined) rememberBase(meta);
    this.#incarnation = incarnation;
    this.#skipTo = skipTo(meta, incarnation, clock.now);
    this.#log = log === 'keep' ? new ChangeLog(tx, keys, clock.now) : undefined;
    this.#markOff = log === 'leave-off';
  }

  get logging(): boolean {
    return this.#log !== undefined;
  }

  logRowBytes(keyOrTopic: string, valuesBytes: number): number {
    const log = this.#log;
    if (log === undefined) return 0;
    // Measured once per origin: a push's mutations each have one.
    if (this.#origin?.[0] !== log.origin) this.#origin = [log.origin, originBytes(log.origin)];
    return logRowBytes(keyOrTopic, valuesBytes, this.#origin[1]);
  }

  recordAs(origin: ChangeOrigin): void {
    if (this.#log !== undefined) this.#log.origin = origin;
  }

  async emit(topic: string, payload: JSONValue): Promise<void> {
    // The mutation's transaction told the app already (write-transaction.ts): this is a slip of ours.
    if (this.#log === undefined) throw new TypeError('emit on a session that keeps no change log: look at `logging` first');
    await this.#log.event(this.#next, topic, payload);
    if (this.#history !== undefined) this.#history += this.logRowBytes(topic, valueBytes(payload));
    this.#changed = true;
  }

  async keepRejected(record: RejectedMutation, event = true): Promise<void> {
    const number = (this.#meta?.rejected ?? 0) + this.#rejected++;
    await this.#tx.put(this.#keys.rejected(number % MAX_REJECTED), keptRecord(record, number));
    if (this.#log !== undefined && event) await this.emit(REJECTED_TOPIC, toStored(record));
    this.#changed = true;
  }

  async usage(): Promise<Usage> {
    // A space last written before viewsync kept counters: counted once, here, the first time a
    // quota asks; the space's next commit stores the count, and its writes keep it exact.
    if (this.#usage === undefined) {
      const usage = { entries: 0, bytes: 0 };
      for await (const page of this.scan('')) {
        for (const [key, value] of page) {
          usage.entries++;
          usage.bytes += entryBytes(key, value);
        }
      }
      this.#usage = usage;
    }
    this.#history ??= await countHistory(this.#tx, this.#keys);
    return { ...this.#usage, history: this.#history };
  }

  checkWrite(key: string): void {
    if (this.#maxKeyBytes === undefined) return;
    const longest = this.#keys.longestRow(key, this.#prefixIndex);
    if (longest > this.#maxKeyBytes) {
      throw new RangeError(
        `A key of ${utf8Length(key)} bytes is too long for this store: with the space's name and the indexes it makes a row key of ${longest} bytes, more than the ${this.#maxKeyBytes} the store can hold (storage.maxKeyBytes)`,
      );
    }
  }

  get #version(): number {
    return this.#meta?.version ?? 0;
  }

  /** The version this session's changes are stamped with, and its commit writes. */
  get #next(): number {
    return Math.max(this.#version + 1, this.#skipTo ?? 0);
  }

  async get(key: string): Promise<JSONValue | undefined> {
    const entry = (await this.#tx.get(this.#keys.entry(key))) as Entry | undefined;
    return entry?.del ? undefined : entry?.val;
  }

  async getMany(keys: readonly string[]): Promise<Array<JSONValue | undefined>> {
    const entries = (await getMany(
      this.#tx,
      keys.map((key) => this.#keys.entry(key)),
    )) as Array<Entry | undefined>;
    return entries.map((entry) => (entry?.del ? undefined : entry?.val));
  }

  async *scan(prefix: string, start?: { key: string; exclusive: boolean }) {
    const skip = this.#keys.entryPrefix.length;
    const from = start && { key: this.#keys.entry(start.key), exclusive: start.exclusive };
    for await (const page of scanPages(this.#tx, { prefix: this.#keys.entryPrefix + prefix, start: from })) yield [...live(page, skip)];
  }

  scanIndex(name: string, prefix: string, start?: { secondary: string; key?: string | undefined; exclusive: boolean }, keysOnly = false) {
    return this.#indexRows.scan(name, prefix, start, keysOnly);
  }

  async put(key: string, value: JSONValue, knownBytes?: number): Promise<void> {
    await this.#stamp(key, { ver: this.#next, val: value }, undefined, knownBytes);
  }

  async del(key: string): Promise<void> {
    const old = (await this.#tx.get(this.#keys.entry(key))) as Entry | undefined;
    if (old === undefined || old.del) return;
    const ver = this.#next;
    await this.#stamp(key, { ver, del: true }, old);
    // Housekeeping removes tombstones oldest first, once they are older than their retention.
    await this.#tx.put(this.#keys.tombstone(ver, key), this.#clock.now);
  }

  async groupSeen(userID: string | undefined, clientGroupID: string): Promise<number | 'expired' | undefined> {
    const key = this.#keys.group(userID, clientGroupID);
    const group = this.#read?.key === key ? this.#read.record : ((await this.#tx.get(key)) as GroupRecord | undefined);
    return group === undefined ? undefined : 'expired' in group ? 'expired' : group.seen;
  }

  async touchGroup(userID: string | undefined, clientGroupID: string, seen: number | undefined, schemaVersion?: string): Promise<void> {
    const { now, touchEveryMs } = this.#clock;
    // Coarse on purpose: a write now and then, not one per pull, is enough to tell idle groups.
    if (seen !== undefined && now - seen < touchEveryMs) return;
    const keys = this.#keys;
    if (seen !== undefined) await this.#tx.del(keys.groupAt(keys.activityPrefix, seen, userID, clientGroupID));
    // A group's schema version never changes (the client opens a new group for a new one): `inspect` counts groups by it.
    await this.#tx.put(
      keys.group(userID, clientGroupID),
      (schemaVersion === undefined ? { seen: now } : { seen: now, schema: schemaVersion }) satisfies GroupRecord,
    );
    await this.#tx.put(keys.groupAt(keys.activityPrefix, now, userID, clientGroupID), [userID ?? null, clientGroupID]);
  }

  get hasExpiredGroups(): boolean {
    return this.#meta?.expiredGroups === true;
  }

  async getClient(userID: string | undefined, clientID: string): Promise<ClientRecord | undefined> {
    const stored = (await this.#tx.get(this.#keys.client(userID, clientID))) as StoredClient | undefined;
    return stored && { clientGroupID: stored.group, lastMutationID: stored.lmid };
  }

  async putClient(userID: string | undefined, clientID: string, { clientGroupID, lastMutationID }: ClientRecord): Promise<void> {
    const tx = this.#tx;
    const keys = this.#keys;
    const ver = this.#next;
    const old = (await tx.get(keys.client(userID, clientID))) as StoredClient | undefined;
    if (old) await tx.del(keys.lmid(userID, old.group, old.ver, clientID));
    await tx.put(keys.client(userID, clientID), { group: clientGroupID, lmid: lastMutationID, ver } satisfies StoredClient);
    await tx.put(keys.lmid(userID, clientGroupID, ver, clientID), lastMutationID);
    this.#changed = true;
  }

  async commit(): Promise<boolean> {
    // A push that changed nothing keeps the version, so the cookie stays equal (a no-op pull).
    if (!this.#changed) return false;
    const created = this.#meta ?? { version: 0, epoch: crypto.randomUUID().replaceAll('-', '').slice(0, 12), base: orderBase(this.#clock.now) };
    // A write without the log keeps its fields as they are: `feedAt` behind the version says the log broke off.
    const { indexFrom, indexedAt, prefixIndexFrom: _, indexes: built, indexesAt, gaps, incarnation, feedOff, ...rest } = created;
    const version = this.#next;
    // The prefix index covers the versions since it was last turned on: a change written without
    // it (the view was off, or an older viewsync wrote) ends the run, and pulls read the version
    // index for older cookies.
    // A space made before cookies were signed gets its secret with its next write.
    const kept = await this.#indexRows.keep(indexesAt === created.version ? (built ?? {}) : {});
    const skipped = version > created.version + 1 ? keptGaps([...(gaps ?? []), [created.version, version]], rest) : gaps === undefined ? {} : { gaps };
    this.#meta = {
      ...rest,
      ...skipped,
      version,
      secret: rest.secret ?? newSecret(),
      ...(this.#prefixIndex && { indexFrom: indexFrom !== undefined && indexedAt === created.version ? indexFrom : version, indexedAt: version }),
      ...this.#usage,
      ...(this.#history !== undefined && { history: this.#history }),
      ...(this.#rejected > 0 && { rejected: (rest.rejected ?? 0) + this.#rejected }),
      ...(kept !== undefined && { indexes: kept, indexesAt: version }),
      // The log runs on from the last write that kept it, or starts at this one; a space turned off stays so until then.
      ...(this.#log !== undefined
        ? { feedFrom: feedFrom(created) ?? created.version, feedAt: version }
        : (feedOff || this.#markOff) && { feedOff: true as const }),
      ...((this.#incarnation ?? incarnation) !== undefined && { incarnation: this.#incarnation ?? incarnation }),
    };
    this.#skipTo = undefined;
    this.#rejected = 0;
    this.#log?.committed();
    await this.#tx.put(this.#keys.meta, this.#meta satisfies Meta);
    this.#changed = false;
    return true;
  }

  #touch(key: string): void {
    if (this.#touched !== undefined && this.#touched.add(key).size > MAX_TOUCHED) this.#touched = undefined;
  }

  touched(): readonly string[] | undefined {
    return this.#touched && [...this.#touched];
  }

  pull(
    cookie: JSONValue,
    group: GroupRef | undefined,
    view?: ResolvedView,
    waitIfAhead?: boolean,
    order?: () => readonly string[],
  ): Promise<PullResult | 'ClientStateNotFound' | 'CookieAhead'> {
    return this.#pulls().pull(cookie, group, view, waitIfAhead, order);
  }

  keepView(view: ResolvedView, used: number | undefined): Promise<void> {
    return this.#pulls().keepView(view, used);
  }

  /** The pull half (global-pull.ts), reading the space as this session holds it. */
  #pulls(): GlobalPull {
    return new GlobalPull(this.#tx, this.#keys, this.#meta, this.#clock, this.#read?.record);
  }

  /** Writes an entry at the next version and moves its version-index row there. */
  async #stamp(key: string, entry: Entry, known?: Entry, knownBytes?: number): Promise<void> {
    const tx = this.#tx;
    const keys = this.#keys;
    const old = known ?? ((await tx.get(keys.entry(key))) as Entry | undefined);
    await tx.put(keys.entry(key), toStored(entry));
    // Counted here, where every write of an entry passes (pushes, backend calls, imports).
    const usage = this.#usage;
    const oldBytes = old === undefined || old.del || (usage === undefined && this.#history === undefined) ? 0 : valueBytes(old.val);
    const newBytes = entry.del || (usage === undefined && this.#history === undefined) ? 0 : valueBytes(entry.val, knownBytes);
    if (usage !== undefined) {
      const keyBytes = utf8Length(key);
      if (old !== undefined && !old.del) {
        usage.entries--;
        usage.bytes -= keyBytes + oldBytes;
      }
      if (!entry.del) {
        usage.entries++;
        usage.bytes += keyBytes + newBytes;
      }
    }
    if (this.#history !== undefined) {
      // Its history: the log's row, the tombstone a delete leaves, the one a set takes away.
      this.#history += this.logRowBytes(key, oldBytes + newBytes) + (entry.del ? tombstoneBytes(key) : 0) - (old?.del ? tombstoneBytes(key) : 0);
    }
    // A tombstone's row goes with it, even one of this version (deleted and set again in one commit).
    if (old?.del) await tx.del(keys.tombstone(old.ver, key));
    if (old?.ver !== entry.ver) {
      if (old !== undefined) await tx.del(keys.version(old.ver, key));
      await tx.put(keys.version(entry.ver, key), null);
      const bucket = this.#prefixIndex ? bucketOf(key) : undefined;
      if (bucket !== undefined) {
        if (old !== undefined) await tx.del(keys.prefixIndexRow(bucket, old.ver, key));
        await tx.put(keys.prefixIndexRow(bucket, entry.ver, key), null);
      }
    }
    await this.#log?.change(entry.ver, key, old === undefined || old.del ? undefined : old.val, entry.del ? undefined : entry.val);
    // The index's name and secondary key stand for its rows in what pokes are told.
    for (const touched of await this.#indexRows.write(key, old === undefined || old.del ? undefined : old.val, entry.del ? undefined : entry.val))
      this.#touch(touched);
    this.#touch(key);
    this.#changed = true;
  }
}

/**
 * Keys a session tells its pokes of; a change of more pokes every stream of the space, which is
 * cheaper than matching each key against each stream's interest.
 */
const MAX_TOUCHED = 64;
