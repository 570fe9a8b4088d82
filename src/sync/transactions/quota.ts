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
}

/** One quota for every space, or each space's own (undefined: none). */
export type Quotas = SpaceQuota | ((space: string) => SpaceQuota | undefined);

/** The quota of `space` under `quotas`, checked; undefined when it has none. */
export function quotaOf(quotas: Quotas | undefined, space: string): SpaceQuota | undefined {
  const quota = typeof quotas === 'function' ? quotas(space) : quotas;
  if (quota === undefined || (quota.entries === undefined && quota.bytes === undefined)) return undefined;
  for (const field of ['entries', 'bytes'] as const) {
    const bound = quota[field];
    // An app's bug (a string from an environment variable, say) must not read as "no quota".
    if (bound !== undefined && !(typeof bound === 'number' && bound >= 0)) throw new TypeError(`quotas.${field} must be a number of at least 0, got ${JSON.stringify(bound)}`);
  }
  return quota;
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
 * The {@link QuotaExceededError} to fail with when `writes` would take the space over `quota`,
 * else undefined (a store's failure rejects: it is no verdict on the writes). Only a
 * write that grows the space is refused: one that deletes, or shrinks as much as it adds, is
 * always allowed, so a space over its quota (lowered since, or filled by an import) can get back
 * under. Reads each written key's current value (in one read): run only when a quota is set.
 * `measured`: the bytes of values already measured, by key.
 */
export async function overQuota(session: SpaceSession, space: string, quota: SpaceQuota, writes: ReadonlyMap<string, JSONValue | typeof DELETED>, measured?: ReadonlyMap<string, number>): Promise<QuotaExceededError | undefined> {
  const now = await session.usage();
  const olds = await session.getMany([...writes.keys()]);
  let entries = 0;
  let bytes = 0;
  let i = 0;
  for (const [key, value] of writes) {
    const old = olds[i++];
    if (old !== undefined) {
      entries--;
      bytes -= entryBytes(key, old);
    }
    if (value !== DELETED) {
      entries++;
      // The writer measured the value as it copied it: no second serialisation.
      bytes += utf8Length(key) + valueBytes(value, measured?.get(key));
    }
  }
  if (entries > 0 && quota.entries !== undefined && now.entries + entries > quota.entries) return new QuotaExceededError(space, 'entries', now.entries + entries, quota.entries);
  if (bytes > 0 && quota.bytes !== undefined && now.bytes + bytes > quota.bytes) return new QuotaExceededError(space, 'bytes', now.bytes + bytes, quota.bytes);
  return undefined;
}
