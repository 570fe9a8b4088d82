import { HTTPError } from '../base/errors.js';
import { TokenBuckets } from '../base/token-buckets.js';
import { countRefusal } from '../telemetry/telemetry.js';

/**
 * How often one client group, or one user, may call: see {@link SyncOptions.rates}. A rate left
 * out is no limit.
 */
export interface RateOptions {
  /** Pushes a second one client group may send. */
  pushesPerSecond?: number | undefined;
  /** Pushes a second one user may send, all their client groups together (needs `authenticate`). */
  userPushesPerSecond?: number | undefined;
  /**
   * Pulls a second one client group may send (a pull v0, which names no group: one client). A
   * client can invent group IDs, each with a bucket of its own: set `userPullsPerSecond` too.
   */
  pullsPerSecond?: number | undefined;
  /** Pulls a second one user may send, all their client groups together (needs `authenticate`). */
  userPullsPerSecond?: number | undefined;
  /**
   * How much of its rate a quiet group or user may spend at once, in milliseconds of it: with
   * `pushesPerSecond: 10` and 2,000, a group that was quiet may send 20 pushes together. At least
   * one request. Default: 1,000.
   */
  burstMs?: number | undefined;
  /**
   * The most groups (and, apart, users) whose use is remembered, per rate; the least recently
   * seen are forgotten first, and one forgotten starts again with a full burst. Bounds the memory
   * that invented client group IDs can take (about 200 bytes and the ID each). Default: 100,000.
   */
  bucketsKept?: number | undefined;
}

/** Which rate refused a request, as telemetry names it. */
type Rate = 'pushes' | 'user_pushes' | 'pulls' | 'user_pulls';

/** The buckets of a context's rates, each made only when its rate is set. */
export interface Rates {
  readonly pushes: TokenBuckets | undefined;
  readonly user_pushes: TokenBuckets | undefined;
  readonly pulls: TokenBuckets | undefined;
  readonly user_pulls: TokenBuckets | undefined;
}

/** The buckets of `options`' rates (checked, their defaults filled in: see options-schema.ts). */
export function resolveRates(options: (RateOptions & { burstMs: number; bucketsKept: number }) | undefined): Rates | undefined {
  if (options === undefined) return undefined;
  const { burstMs } = options;
  const kept = Math.max(1, Math.floor(options.bucketsKept));
  const buckets = (field: (typeof PER_SECOND)[Rate]) => {
    const perSecond = options[field];
    return perSecond === undefined ? undefined : new TokenBuckets(perSecond, Math.max(1, (perSecond * burstMs) / 1000), kept);
  };
  return {
    pushes: buckets('pushesPerSecond'),
    user_pushes: buckets('userPushesPerSecond'),
    pulls: buckets('pullsPerSecond'),
    user_pulls: buckets('userPullsPerSecond'),
  };
}

/**
 * Takes a request's token from each bucket of `rate` it falls under; throws a 429 with
 * `Retry-After` (whole seconds, at least 1) when one is empty. Called before a request does any
 * storage work, so a flood costs its sender's bucket and no one else's.
 */
export function admit(rates: Rates | undefined, rate: Rate, key: string, now: number): void {
  const buckets = rates?.[rate];
  if (buckets === undefined) return;
  const waitMs = buckets.take(key, now);
  if (waitMs === 0) return;
  countRefusal(`rate.${rate}`);
  const who = rate.startsWith('user_') ? 'This user' : 'This client group';
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  throw new HTTPError(
    429,
    `${who} sent ${rate.endsWith('pulls') ? 'pulls' : 'pushes'} faster than this server allows (rates.${PER_SECOND[rate]}); retry in ${seconds} s`,
    { headers: { 'retry-after': String(seconds) } },
  );
}

/** The key of a group's bucket: its user's and its own ID, apart (groups are per user). */
export function groupKey(userID: string | undefined, clientGroupID: string): string {
  return userID === undefined ? `-${clientGroupID}` : `${userID.length}:${userID}${clientGroupID}`;
}

/** Each rate's option. */
const PER_SECOND = { pushes: 'pushesPerSecond', user_pushes: 'userPushesPerSecond', pulls: 'pullsPerSecond', user_pulls: 'userPullsPerSecond' } as const;
