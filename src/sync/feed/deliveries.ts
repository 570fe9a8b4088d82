import type { StorageTransaction } from '../../storage/types.js';
import { encodeVersion, SpaceKeys } from '../version/keys.js';
import type { Meta } from '../version/records.js';
import { feedFrom } from './change-log.js';
import { type Cursor, type FeedChange, ChangesGoneError, parseCursor, readFeedPage } from './feed-pages.js';
import { recordOf, toStored } from '../../storage/records.js';

/**
 * A webhook's deliveries in one space, kept in the space's own rows (`h/<space>/<name>`, see
 * keys.ts), so that they move with it, and changed in transactions of its deliveries lane
 * (`WriteLane`), which write nothing else and read the log a push only adds to: where the webhook
 * has got to in the change log, the batch it is delivering (fixed at its first attempt, so every
 * attempt sends the same changes under the same ID), deliveries asked again, who holds the
 * lease to deliver (one instance at a time), and why it was disabled. Each delivery made is kept
 * beside it (`h/<space>/<name>/<place>`) for the change log's retention, to be replayed by its ID.
 */

/** What a webhook takes, as the delivery state needs it. */
export interface HookRule {
  name: string;
  /** Whether the webhook wants `change` (its prefixes and topics). */
  wants(change: FeedChange): boolean;
  /** Changes per delivery, at most. */
  maxBatch: number;
  /** About this many characters of JSON per delivery, at most (one change may take more). */
  maxChars: number;
  /** How long a batch is retried before the webhook is disabled in the space. */
  retryForMs: number;
  /** How long a claimed delivery is the claimer's alone: past it, another instance takes it over. */
  leaseMs: number;
  /** Delivery records kept in a space for replays, at most. Default: {@link MAX_RECORDS}. */
  maxRecords?: number;
}

/** A range of the log delivered as one: the changes after `from`, up to and including `to`. */
export interface Batch {
  from: string;
  to: string;
  attempts: number;
  /** When it was first tried, and when it may be tried next (ms since the epoch). */
  firstAt: number;
  nextAt: number;
  /** A delivery asked again (`replayWebhook`): sent again as it was, and the cursor stays. */
  replay?: true;
  /** The gap the webhook was told to go on after (`enableWebhook` with `afterGap`), told to the receiver with the batch after it. */
  gap?: Gap;
  /** Why its last attempt failed. */
  error?: string;
}

/** Changes of the log never delivered: those after `from` up to `to`, gone when the webhook was enabled after them. */
export interface Gap {
  from: string;
  to: string;
}

/** The delivery state of a webhook in a space, as stored. */
export interface DeliveryState {
  /** Delivered up to here. */
  cursor: string;
  /** A gap the webhook went on after, to be told with its next batch. */
  gap?: Gap;
  pending?: Batch;
  /** Deliveries asked again, oldest first. */
  replays?: Array<{ from: string; to: string }>;
  lease?: { owner: string; until: number };
  disabled?: { at: number; reason: string };
  /** Deliveries made, and attempts that failed. */
  delivered: number;
  failures: number;
  /** Delivery records kept for replays (absent in a state kept before they were counted: none counted). */
  records?: number;
  /** When the last delivery was made. */
  lastAt?: number;
}

/** A delivery made, kept for replays: its range, when, after how many attempts. */
export interface DeliveryRecord {
  from: string;
  to: string;
  at: number;
  attempts: number;
}

/** What a claim came to: a batch to send (with its changes), or why there is none now. */
export type Claim = (
  | { kind: 'deliver'; batch: Batch; changes: FeedChange[]; version: number }
  | { kind: 'wait'; until: number }
  | { kind: 'idle' }
  | { kind: 'disabled'; reason: string /** Disabled by this claim, not before. */; now: boolean }
) & {
  /** Deliveries asked again that could not be sent as they were (their changes trimmed), and why: dropped. */
  dropped?: string[];
};

/** The ID of a delivery of `space` from `from` to `to`: the same for every attempt and every replay of it. */
export function deliveryID(space: string, { from, to }: { from: string; to: string }): string {
  return `${encodeURIComponent(space)}:${from}..${to}`;
}

/**
 * When webhook `name` may next have something to do in `space` (see {@link deliveryDueAt}):
 * read first, in a read-only transaction, so that looking at a space with nothing new, or whose
 * delivery another instance holds, takes no write lock. A claim then says what.
 */
export async function deliveryDue(tx: StorageTransaction, space: string, name: string, now: number): Promise<number | undefined> {
  const keys = new SpaceKeys(space);
  const [meta, state] = (await Promise.all([tx.get(keys.meta), tx.get(keys.delivery(name))])) as [Meta | undefined, DeliveryState | undefined];
  return deliveryDueAt(meta, state, now);
}

/**
 * When a webhook whose state in a space is `state` may next have something to do there, as of
 * `now`, told by the space's `meta` alone (no log read): undefined when nothing is (idle,
 * disabled). A batch waiting for its retry, or another owner's lease, makes it later than now.
 */
export function deliveryDueAt(meta: Meta | undefined, state: DeliveryState | undefined, now: number): number | undefined {
  if (meta === undefined) return undefined;
  // A webhook starts where the space's log is whole: none yet, nothing to do.
  if (state === undefined) return feedFrom(meta) !== undefined ? now : undefined;
  if (state.disabled) return undefined;
  const free = state.lease !== undefined && state.lease.until > now ? state.lease.until : now;
  if (state.pending !== undefined) return Math.max(free, state.pending.nextAt);
  if ((state.replays?.length ?? 0) > 0) return free;
  const cursor = parseCursor(state.cursor);
  return meta.version > cursor.version || cursor.seq !== undefined ? free : undefined;
}

/** The keys a claim or a record of webhook `name` in `space` reads first: the space's meta record and the webhook's state there. */
export function deliveryReads(space: string, name: string): string[] {
  const keys = new SpaceKeys(space);
  return [keys.meta, keys.delivery(name)];
}

/**
 * Claims the next delivery of webhook `rule` in `space` for `owner` at `now`, in `tx`: the batch
 * in flight (if its retry is due), else a delivery asked again, else the next changes the webhook
 * wants. Ranges holding none it wants are passed over (the cursor moves on). Another owner's
 * lease not yet run out makes it wait.
 */
export async function claimDelivery(tx: StorageTransaction, space: string, rule: HookRule, owner: string, now: number): Promise<Claim> {
  const keys = new SpaceKeys(space);
  const [meta, stored] = (await Promise.all([tx.get(keys.meta), tx.get(keys.delivery(rule.name))])) as [Meta | undefined, DeliveryState | undefined];
  if (meta === undefined) return { kind: 'idle' };
  // A webhook new to the space starts where its log is whole; until a write starts it, there is nothing to send.
  const start = feedFrom(meta);
  if (stored === undefined && start === undefined) return { kind: 'idle' };
  const state: DeliveryState = stored ?? { cursor: String(start), delivered: 0, failures: 0 };
  if (state.disabled) return { kind: 'disabled', reason: state.disabled.reason, now: false };
  if (state.lease && state.lease.owner !== owner && state.lease.until > now) return { kind: 'wait', until: state.lease.until };
  const save = () => tx.put(keys.delivery(rule.name), toStored(state));
  try {
    let changes: FeedChange[] | undefined;
    if (state.pending === undefined && state.replays?.length)
      state.pending = { ...state.replays.shift()!, attempts: 0, firstAt: now, nextAt: now, replay: true };
    for (let page = 0; state.pending === undefined; page++) {
      const read = await readFeedPage(tx, space, parseCursor(state.cursor), { limit: rule.maxBatch, maxChars: rule.maxChars });
      changes = read.changes.filter((change) => rule.wants(change));
      if (changes.length > 0) {
        state.pending = { from: state.cursor, to: read.cursor, attempts: 0, firstAt: now, nextAt: now, ...(state.gap && { gap: state.gap }) };
        delete state.gap;
      } else {
        const moved = read.cursor !== state.cursor;
        state.cursor = read.cursor;
        // Nothing wanted up to here: the cursor moves on, and a long run of unwanted changes is read a few pages per claim.
        if (!read.more || page === PAGES_PER_CLAIM) {
          if (moved || stored === undefined) await save();
          return read.more ? { kind: 'wait', until: now } : { kind: 'idle' };
        }
      }
    }
    const batch = state.pending;
    if (batch.nextAt > now) {
      if (stored === undefined || stored.pending === undefined) await save();
      return { kind: 'wait', until: batch.nextAt };
    }
    changes ??= await readBatch(tx, space, rule, batch);
    state.lease = { owner, until: now + rule.leaseMs };
    await save();
    return { kind: 'deliver', batch, changes, version: meta.version };
  } catch (error) {
    if (!(error instanceof ChangesGoneError)) throw error;
    if (state.pending?.replay) {
      // A delivery asked again whose changes are trimmed cannot be sent as it was: the rest go on.
      const dropped = `delivery ${deliveryID(space, state.pending)}, asked again, was dropped: ${error.message}`;
      delete state.pending;
      delete state.lease;
      await save();
      const next = await claimDelivery(tx, space, rule, owner, now);
      return { ...next, dropped: [dropped, ...(next.dropped ?? [])] };
    }
    // The log no longer holds what the webhook has to send: it cannot go on without a gap.
    state.disabled = { at: now, reason: `the change log no longer holds the changes to deliver: ${error.message} ${AFTER_GAP}` };
    delete state.lease;
    await save();
    return { kind: 'disabled', reason: state.disabled.reason, now: true };
  }
}

/**
 * Records how `owner`'s delivery of `batch` went. Delivered: the cursor moves to its end (a
 * replay's leaves it), and the delivery is kept for replays. Failed: tried again after a backoff,
 * until it has failed for `retryForMs`, when the webhook is disabled in the space with the last
 * error as its reason. Resolves `'lost'`, changing nothing, when the lease was lost meanwhile (it
 * ran out and another instance took the batch over: it sends it again, under the same ID).
 */
export async function finishDelivery(
  tx: StorageTransaction,
  space: string,
  rule: HookRule,
  owner: string,
  batch: Batch,
  outcome: { ok: true } | { ok: false; error: string },
  now: number,
  retentionMs: number | false,
): Promise<'delivered' | 'failed' | 'disabled' | 'lost'> {
  const keys = new SpaceKeys(space);
  const state = (await tx.get(keys.delivery(rule.name))) as DeliveryState | undefined;
  const pending = state?.pending;
  if (state === undefined || state.lease?.owner !== owner || pending?.from !== batch.from || pending.to !== batch.to) return 'lost';
  delete state.lease;
  if (outcome.ok) {
    if (!pending.replay) state.cursor = pending.to;
    delete state.pending;
    state.delivered++;
    state.lastAt = now;
    await tx.put(recordKey(keys, rule.name, parseCursor(pending.to), pending.from), {
      from: pending.from,
      to: pending.to,
      at: now,
      attempts: pending.attempts + 1,
    } satisfies DeliveryRecord);
    state.records = (state.records ?? 0) + 1;
    await trimRecords(tx, keys, rule.name, state, retentionMs === false ? -Infinity : now - retentionMs, rule.maxRecords ?? MAX_RECORDS);
  } else {
    pending.attempts++;
    pending.error = outcome.error.slice(0, 500);
    state.failures++;
    pending.nextAt = now + backoff(pending.attempts);
    if (now - pending.firstAt >= rule.retryForMs)
      state.disabled = {
        at: now,
        reason: `deliveries failed for ${Math.round((now - pending.firstAt) / 60_000)} min (${pending.attempts} attempts); the last: ${pending.error}`,
      };
  }
  await tx.put(keys.delivery(rule.name), toStored(state));
  return outcome.ok ? 'delivered' : state.disabled ? 'disabled' : 'failed';
}

/** Milliseconds before attempt `attempts + 1`: 1 s doubling up to 10 min, each with up to a fifth more at random (so failing webhooks do not all retry at once). */
export function backoff(attempts: number): number {
  const base = Math.min(MAX_BACKOFF_MS, 1_000 * 2 ** Math.min(attempts - 1, 20));
  return Math.round(base * (1 + Math.random() / 5));
}

/** The changes of `batch` the webhook wants, read again from the log. */
async function readBatch(tx: StorageTransaction, space: string, rule: HookRule, batch: Batch): Promise<FeedChange[]> {
  const to = parseCursor(batch.to);
  const changes: FeedChange[] = [];
  for (let after = parseCursor(batch.from); ; ) {
    const page = await readFeedPage(tx, space, after, { limit: rule.maxBatch, maxChars: Number.MAX_SAFE_INTEGER });
    for (const change of page.changes) if (atOrBefore(change, to) && rule.wants(change)) changes.push(change);
    after = parseCursor(page.cursor);
    if (!page.more || !atOrBefore(after, to)) return changes;
  }
}

function atOrBefore(place: Cursor, to: Cursor): boolean {
  return comparePlaces(place, to) <= 0;
}

/** The key of the record of a delivery that ended at `to`, after `from`: in log order. */
function recordKey(keys: SpaceKeys, name: string, to: Cursor, from: string): string {
  return `${keys.deliveryLog(name)}${encodeVersion(to.version)}${to.seq === undefined ? '~' : `.${to.seq.toString(16).padStart(8, '0')}`}/${from}`;
}

/**
 * Removes up to a few of the webhook's oldest delivery records made before `cutoff`, or past
 * `most` of them: each delivery trims what retention lets go, and a busy space keeps
 * a bounded number however long its retention (a space's rows are its tenant's to fill).
 */
async function trimRecords(tx: StorageTransaction, keys: SpaceKeys, name: string, state: DeliveryState, cutoff: number, most: number): Promise<void> {
  for (const [key, value] of await tx.scan({ prefix: keys.deliveryLog(name), limit: 2 })) {
    if (recordOf<DeliveryRecord>(value).at >= cutoff && (state.records ?? 0) <= most) continue;
    await tx.del(key);
    if (state.records !== undefined) state.records = Math.max(0, state.records - 1);
  }
}

/** The delivery records of the webhook named `name` in `space` whose ranges meet `(from, to]`, oldest first. */
export async function deliveriesIn(tx: StorageTransaction, space: string, name: string, from: Cursor, to: Cursor): Promise<DeliveryRecord[]> {
  const records = (await tx.scan({ prefix: new SpaceKeys(space).deliveryLog(name) })).map(([, value]) => recordOf<DeliveryRecord>(value));
  return records.filter((record) => comparePlaces(parseCursor(record.to), from) > 0 && comparePlaces(parseCursor(record.from), to) < 0);
}

/** Places in the log in order; a cursor of a whole version comes after each of its rows. */
function comparePlaces(a: Cursor, b: Cursor): number {
  return a.version - b.version || (a.seq ?? Infinity) - (b.seq ?? Infinity) || 0;
}

/** Asks again for `records` (see `replayWebhook`); resolves with how many were not already asked. */
export async function askAgain(tx: StorageTransaction, space: string, name: string, records: readonly DeliveryRecord[]): Promise<number> {
  const keys = new SpaceKeys(space);
  const state = (await tx.get(keys.delivery(name))) as DeliveryState | undefined;
  if (state === undefined) return 0;
  const replays = (state.replays ??= []);
  let added = 0;
  for (const { from, to } of records) {
    if (replays.some((replay) => replay.from === from && replay.to === to) || replays.length >= MAX_REPLAYS) continue;
    replays.push({ from, to });
    added++;
  }
  await tx.put(keys.delivery(name), toStored(state));
  return added;
}

/** What to tell an operator whose webhook the log's gap stopped. */
const AFTER_GAP =
  'To go on after the gap, and never deliver the changes in it: enableWebhook(ctx, name, space, { afterGap: true }), or viewsync webhook enable NAME SPACE --after-gap.';

/**
 * Enables the webhook named `name` in `space` again; its batch in flight is retried at once.
 * Resolves whether it was disabled (undefined: it never delivered there). When the log no
 * longer holds the changes after its cursor, throws a {@link ChangesGoneError} saying so,
 * unless `afterGap`: the webhook then goes on from
 * where the log is whole (or from now, when no write kept it since), its batch in flight and the
 * deliveries asked again before that dropped, and its next batch tells the receiver of the gap.
 */
export async function enableDelivery(tx: StorageTransaction, space: string, name: string, now: number, afterGap = false): Promise<boolean | undefined> {
  const keys = new SpaceKeys(space);
  const [meta, state] = (await Promise.all([tx.get(keys.meta), tx.get(keys.delivery(name))])) as [Meta | undefined, DeliveryState | undefined];
  if (state === undefined) return undefined;
  if (state.disabled === undefined) return false;
  const cursor = parseCursor(state.cursor);
  try {
    await readFeedPage(tx, space, cursor, { limit: 1, maxChars: 0 });
  } catch (error) {
    if (!(error instanceof ChangesGoneError)) throw error;
    if (!afterGap)
      throw new ChangesGoneError(
        `Webhook ${JSON.stringify(name)} cannot go on in space ${JSON.stringify(space)} from its cursor ${state.cursor}: ${error.message.replace(/ Start again from an export.*$/, '')} ${AFTER_GAP}`,
      );
    const resume = feedFrom(meta) ?? meta?.version ?? 0;
    state.gap = { from: state.gap?.from ?? state.cursor, to: String(resume) };
    state.cursor = String(resume);
    delete state.pending;
    state.replays = state.replays?.filter((replay) => comparePlaces(parseCursor(replay.from), { version: resume }) >= 0);
    if (state.replays?.length === 0) delete state.replays;
  }
  delete state.disabled;
  delete state.lease;
  if (state.pending) Object.assign(state.pending, { firstAt: now, nextAt: now });
  await tx.put(keys.delivery(name), toStored(state));
  return true;
}

/** The webhooks' delivery states in `space`, by name. */
export async function deliveryStates(tx: StorageTransaction, space: string): Promise<Map<string, DeliveryState>> {
  const keys = new SpaceKeys(space);
  const states = new Map<string, DeliveryState>();
  for (const [key, value] of await tx.scan({ prefix: keys.deliveryPrefix })) {
    const rest = key.slice(keys.deliveryPrefix.length);
    if (!rest.includes('/')) states.set(rest, recordOf<DeliveryState>(value));
  }
  return states;
}

const PAGES_PER_CLAIM = 10;
const MAX_BACKOFF_MS = 10 * 60_000;
const MAX_REPLAYS = 1_000;
/** Delivery records kept per webhook and space, at most: about 150 bytes each. */
export const MAX_RECORDS = 10_000;
