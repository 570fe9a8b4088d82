/**
 * The live numbers the inspector draws (src/inspector/): pushes, pulls, pokes, mutations, errors
 * and refusals a second, over the last minute, with latency percentiles, and each space's pushes
 * and pulls. The same events the OpenTelemetry metrics record (telemetry.ts), counted in this
 * process only and kept in fixed memory: 60 seconds of counters, a fixed histogram per second,
 * and at most {@link MAX_SPACES} spaces a half-minute. Kept only where a context has an inspector.
 */

/** What is counted each second. */
export type LiveCount = 'pushes' | 'pulls' | 'pokes' | 'mutations' | 'errors' | 'refusals';

const COUNTS: readonly LiveCount[] = ['pushes', 'pulls', 'pokes', 'mutations', 'errors', 'refusals'];

/** Seconds kept. */
const SECONDS = 60;

/** Latency buckets: bucket i holds durations up to 0.1 ms × 1.25^i, so a percentile is read within 25%, from 0.1 ms to about 2 minutes. */
const BUCKETS = 64;
const SMALLEST_MS = 0.1;
const LOG_STEP = Math.log(1.25);

/** Spaces whose activity is counted a half-minute: past this, more spaces go uncounted (a client cannot grow the map). */
export const MAX_SPACES = 10_000;

interface Second {
  t: number;
  counts: Record<LiveCount, number>;
  push: Uint32Array;
  pull: Uint32Array;
}

/** One second's numbers, as the inspector's API answers them. */
export type LiveSecondCounts = { t: number } & Record<LiveCount, number>;

/** Latency percentiles of the last minute, in milliseconds (the bucket's upper bound); null when nothing was timed. */
export interface LivePercentiles {
  p50: number | null;
  p90: number | null;
  p99: number | null;
  count: number;
}

/** The live numbers of one context. */
export class LiveStats {
  readonly #seconds: Second[] = [];
  readonly #clock: () => number;
  /** Each space's pushes and pulls this half-minute, and the last. */
  #spaces = new Map<string, { pushes: number; pulls: number }>();
  #lastSpaces = new Map<string, { pushes: number; pulls: number }>();
  #spacesSince: number;

  constructor(clock: () => number = Date.now) {
    this.#clock = clock;
    this.#spacesSince = clock();
  }

  /** Adds `n` to this second's `count`. */
  count(count: LiveCount, n = 1): void {
    this.#now().counts[count] += n;
  }

  /** A pull or push was answered with `status` after `ms`: counted, timed, and, with its space, added to the space's activity. */
  request(kind: 'pull' | 'push', status: number, ms: number, space: string | undefined, mutations = 0): void {
    const second = this.#now();
    second.counts[kind === 'pull' ? 'pulls' : 'pushes']++;
    second.counts.mutations += mutations;
    if (status >= 500) second.counts.errors++;
    else if (status === 429) second.counts.refusals++;
    const bucket = ms <= SMALLEST_MS ? 0 : Math.min(BUCKETS - 1, Math.ceil(Math.log(ms / SMALLEST_MS) / LOG_STEP));
    second[kind][bucket]!++;
    if (space !== undefined) this.#active(space, kind);
  }

  /** The last minute, a second at a time, oldest first (seconds with nothing are there, as zeros). */
  seconds(): LiveSecondCounts[] {
    const now = Math.floor(this.#clock() / 1000) * 1000;
    const out: LiveSecondCounts[] = [];
    const byTime = new Map(this.#seconds.map((second) => [second.t, second]));
    for (let t = now - (SECONDS - 1) * 1000; t <= now; t += 1000) {
      const second = byTime.get(t);
      out.push({ t, ...(second?.counts ?? zeros()) });
    }
    return out;
  }

  /** The percentiles of the last minute's latencies of `kind`. */
  latency(kind: 'pull' | 'push'): LivePercentiles {
    const since = this.#clock() - SECONDS * 1000;
    const sum = new Uint32Array(BUCKETS);
    for (const second of this.#seconds) if (second.t > since) for (let i = 0; i < BUCKETS; i++) sum[i]! += second[kind][i]!;
    const count = sum.reduce((a, b) => a + b, 0);
    const at = (fraction: number): number | null => {
      if (count === 0) return null;
      let seen = 0;
      for (let i = 0; i < BUCKETS; i++) {
        seen += sum[i]!;
        if (seen >= fraction * count) return Math.round(SMALLEST_MS * 1.25 ** i * 1000) / 1000;
      }
      return null;
    };
    return { p50: at(0.5), p90: at(0.9), p99: at(0.99), count };
  }

  /** A space's pushes and pulls over the last half-minute to minute. */
  activity(space: string): { pushes: number; pulls: number } {
    this.#rollSpaces();
    const a = this.#spaces.get(space);
    const b = this.#lastSpaces.get(space);
    return { pushes: (a?.pushes ?? 0) + (b?.pushes ?? 0), pulls: (a?.pulls ?? 0) + (b?.pulls ?? 0) };
  }

  #active(space: string, kind: 'pull' | 'push'): void {
    this.#rollSpaces();
    let counts = this.#spaces.get(space);
    if (counts === undefined) {
      if (this.#spaces.size >= MAX_SPACES) return;
      this.#spaces.set(space, (counts = { pushes: 0, pulls: 0 }));
    }
    counts[kind === 'pull' ? 'pulls' : 'pushes']++;
  }

  /** Every half-minute the counts start again, the last half-minute's kept beside them. */
  #rollSpaces(): void {
    const now = this.#clock();
    if (now - this.#spacesSince < (SECONDS / 2) * 1000) return;
    this.#lastSpaces = now - this.#spacesSince < SECONDS * 1000 ? this.#spaces : new Map();
    this.#spaces = new Map();
    this.#spacesSince = now;
  }

  /** This second's bucket, made (and the oldest dropped) when the second is new. */
  #now(): Second {
    const t = Math.floor(this.#clock() / 1000) * 1000;
    const last = this.#seconds.at(-1);
    if (last !== undefined && last.t === t) return last;
    const second: Second = { t, counts: zeros(), push: new Uint32Array(BUCKETS), pull: new Uint32Array(BUCKETS) };
    this.#seconds.push(second);
    while (this.#seconds.length > 0 && this.#seconds[0]!.t <= t - SECONDS * 1000) this.#seconds.shift();
    return second;
  }
}

function zeros(): Record<LiveCount, number> {
  return Object.fromEntries(COUNTS.map((count) => [count, 0])) as Record<LiveCount, number>;
}
