import { orderBase } from './cookie.js';
import type { Meta } from './records.js';

/**
 * Versions skipped after a store came back with fewer commits than it acknowledged (see
 * `StorageTransaction.incarnation` and `Meta.gaps`): a cookie of a lost commit must never name
 * other data. cookie.ts answers a cookie in a skipped range as lost.
 */

/**
 * Where a write skips to when it finds the store in another incarnation than the space's last
 * write did: a failover or a restore may have lost commits, and the versions they gave clients
 * must never name other data. Versions grow by at most a thousand a millisecond of a space's
 * life (cookie.ts), so none the lost commits took is above the one the clock gives now: the
 * write takes that one, and the skipped range is kept in `Meta.gaps`. A space whose last write
 * named no incarnation (an older viewsync, another store) is taken as it is.
 */
export function skipTo(meta: Meta | undefined, incarnation: string | undefined, now: number): number | undefined {
  if (incarnation === undefined || meta?.incarnation === undefined || meta.incarnation === incarnation) return undefined;
  const ahead = orderBase(now) - meta.base;
  return ahead > meta.version + 1 ? ahead : undefined;
}

/** Gaps kept: the newest few. One dropped raises the floor past it, so a cookie in it gets a reset rather than a patch. */
export function keptGaps(gaps: Array<[number, number]>, meta: { floor?: number }): { gaps: Array<[number, number]>; floor?: number } {
  const live = gaps.filter(([, to]) => to > (meta.floor ?? 0));
  if (live.length <= GAPS_KEPT) return { gaps: live };
  const dropped = live.slice(0, live.length - GAPS_KEPT);
  return { gaps: live.slice(-GAPS_KEPT), floor: Math.max(meta.floor ?? 0, ...dropped.map(([, to]) => to)) };
}

const GAPS_KEPT = 16;
