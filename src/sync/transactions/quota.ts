import type { JSONValue } from '../../protocol/json.js';
import { QuotaExceededError } from '../../base/errors.js';
import { jsonStringBytes, utf8Length } from '../../base/utf8.js';
import { DELETED } from './read-transaction.js';
import type { SpaceSession, Usage } from '../version/strategy.js';

/** What one space may hold; a bound left out is no bound. */
export interface SpaceQuota {
  /** The most live entries. */
  entries?: number | undefined;
  /** The most bytes of live entries: their keys and their values as JSON text, in UTF-8. */
  bytes?: number | undefined;
  /**
   * The most bytes of the space's history, kept until retention lets it go: its change log (each
   * change's value before and after, and events) and the tombstones of its deleted entries,
   * counted as sync/history/history-bytes.ts does. Default: `bytes`, so that a
   * space holds at most about twice its byte quota; `false`: no bound.
   */
  historyBytes?: number | false | undefined;
}

/** One quota for every space, or each space's own (undefined: none). */
export type Quotas = SpaceQuota | ((space: string) => SpaceQuota | undefined);

/** The quota of `space` under `quotas`, checked; undefined when it has none. */
export function quotaOf(quotas: Quotas | undefined, space: string): SpaceQuota | undefined {
  const quota = typeof quotas === 'function' ? quotas(space) : quotas;
  if (quota === undefined || (quota.entries === undefined && quota.bytes === undefined && (quota.historyBytes === undefined || quota.historyBytes === false)))
    return undefined;
  for (const field of ['entries', 'bytes', 'historyBytes'] as const) {
    const bound = quota[field];
    // An app's bug (a string from an environment variable, say) must not read as "no quota".
    if (bound !== undefined && !(field === 'historyBytes' && bound === false) && !(typeof bound === 'number' && bound >= 0))
      throw new TypeError(`quotas.${field} must be a number of at least 0${field === 'historyBytes' ? ', or false' : ''}, got ${JSON.stringify(bound)}`);
  }
  return quota;
}

/** The bound on a space's history under `quota` (see {@link SpaceQuota.historyBytes}); undefined: none. */
export function historyLimit(quota: SpaceQuota): number | undefined {
  return quota.historyBytes === false ? undefined : (quota.historyBytes ?? quota.bytes);
}

/** What an entry counts for in {@link Usage.bytes}. */
export function entryBytes(key: string, value: JSONValue): number {
  return utf8Length(key) + valueBytes(value);
}

/** The UTF-8 bytes of `value`'s JSON text (`known`, when its writer measured it already). */
export function valueBytes(value: JSONValue, known?: number): number {
  if (known !== undefined) return known;
  // A string, the commonest value, is measured without making its JSON text.
  if (typeof value === 'string') return jsonStringBytes(value);
  return typeof value === 'object' && value !== null ? utf8Length(JSON.stringify(value)) : String(value).length;
}

/**
 * The {@link QuotaExceededError} to fail with when `writes` (and `events`, each a topic and its
 * payload's bytes) would take the space over `quota`, else undefined (a store's failure rejects:
 * it is no verdict on the writes). A write that grows the live entries past `entries` or
 * `bytes` is refused: one that deletes, or shrinks as much as it adds, is allowed, so a space
 * over its quota (lowered since, or filled by an import) can get back under. A write that adds to
 * the space's history (with the change log on, every set and event) is refused while that would
 * take the history past its bound; deletes always go through. Reads each written key's current
 * value (in one read): run only when a quota is set. `measured`: the bytes of values already
 * measured, by key.
 */
export async function overQuota(
  session: SpaceSession,
  space: string,
  quota: SpaceQuota,
  writes: ReadonlyMap<string, JSONValue | typeof DELETED>,
  measured?: ReadonlyMap<string, number>,
  events: ReadonlyArray<readonly [topic: string, bytes: number]> = [],
): Promise<QuotaExceededError | undefined> {
  const now = await session.usage();
  const olds = await session.getMany([...writes.keys()]);
  let entries = 0;
  let bytes = 0;
  // What the sets and events add to the log (deletes are left out: they may always go).
  let history = 0;
  let i = 0;
  for (const [key, value] of writes) {
    const old = olds[i++];
    const oldBytes = old === undefined ? 0 : valueBytes(old);
    if (old !== undefined) {
      entries--;
      bytes -= utf8Length(key) + oldBytes;
    }
    if (value !== DELETED) {
      entries++;
      // The writer measured the value as it copied it: no second serialisation.
      const newBytes = valueBytes(value, measured?.get(key));
      bytes += utf8Length(key) + newBytes;
      history += session.logRowBytes(key, oldBytes + newBytes);
    }
  }
  for (const [topic, payloadBytes] of events) history += session.logRowBytes(topic, payloadBytes);
  if (entries > 0 && quota.entries !== undefined && now.entries + entries > quota.entries)
    return new QuotaExceededError(space, 'entries', now.entries + entries, quota.entries);
  if (bytes > 0 && quota.bytes !== undefined && now.bytes + bytes > quota.bytes) return new QuotaExceededError(space, 'bytes', now.bytes + bytes, quota.bytes);
  const limit = historyLimit(quota);
  // A set with the log off adds nothing, but is still held back by a history over its bound (tombstones).
  const adds = history > 0 || [...writes.values()].some((value) => value !== DELETED);
  if (limit !== undefined && adds && now.history + history > limit) return new QuotaExceededError(space, 'historyBytes', now.history + history, limit);
  return undefined;
}
