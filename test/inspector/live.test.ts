/**
 * The live numbers (src/telemetry/live.ts): a second at a time over the last minute, latency
 * percentiles within a bucket's 25%, each space's activity over the last half-minute to minute,
 * and fixed memory whatever the traffic.
 */
import { describe, expect, it } from 'vitest';
import { LiveStats, MAX_SPACES } from '../../src/telemetry/live.js';

function clock(start = 1_000_000) {
  const c = { now: start, fn: () => c.now };
  return c;
}

describe('LiveStats', () => {
  it('counts each second apart, and forgets seconds past the minute', () => {
    const c = clock();
    const live = new LiveStats(c.fn);
    live.request('push', 200, 3, 'a', 4);
    live.request('pull', 500, 1, 'a');
    live.request('pull', 429, 1, 'b');
    live.count('pokes', 7);
    c.now += 1000;
    live.request('push', 200, 3, 'a', 1);
    let seconds = live.seconds();
    expect(seconds).toHaveLength(60);
    expect(seconds.at(-2)).toEqual({ t: 1_000_000, pushes: 1, pulls: 2, pokes: 7, mutations: 4, errors: 1, refusals: 1 });
    expect(seconds.at(-1)).toMatchObject({ t: 1_001_000, pushes: 1, mutations: 1 });
    c.now += 59_000;
    seconds = live.seconds();
    expect(seconds.reduce((sum, second) => sum + second.pushes, 0)).toBe(1);
    c.now += 1_000;
    expect(live.seconds().every((second) => second.pushes === 0)).toBe(true);
  });

  it('reads latency percentiles within 25%', () => {
    const live = new LiveStats(clock().fn);
    expect(live.latency('push')).toEqual({ p50: null, p90: null, p99: null, count: 0 });
    for (let i = 1; i <= 100; i++) live.request('push', 200, i, undefined);
    const { p50, p90, p99, count } = live.latency('push');
    expect(count).toBe(100);
    for (const [got, want] of [
      [p50, 50],
      [p90, 90],
      [p99, 99],
    ] as const) {
      expect(got!).toBeGreaterThanOrEqual(want);
      expect(got!).toBeLessThanOrEqual(want * 1.25);
    }
    expect(live.latency('pull').count).toBe(0);
  });

  it("keeps each space's activity for a half-minute to a minute, and at most MAX_SPACES spaces", () => {
    const c = clock();
    const live = new LiveStats(c.fn);
    live.request('push', 200, 1, 'a');
    live.request('pull', 200, 1, 'a');
    c.now += 31_000;
    live.request('push', 200, 1, 'a');
    expect(live.activity('a')).toEqual({ pushes: 2, pulls: 1 });
    c.now += 31_000;
    expect(live.activity('a')).toEqual({ pushes: 1, pulls: 0 });
    c.now += 61_000;
    expect(live.activity('a')).toEqual({ pushes: 0, pulls: 0 });
    for (let i = 0; i < MAX_SPACES + 10; i++) live.request('push', 200, 1, `s${i}`);
    expect(live.activity(`s${MAX_SPACES + 5}`)).toEqual({ pushes: 0, pulls: 0 });
    expect(live.activity('s0')).toEqual({ pushes: 1, pulls: 0 });
  });
});
