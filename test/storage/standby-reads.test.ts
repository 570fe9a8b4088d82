/**
 * The routing of reads between a primary and its standbys (src/storage/standby-reads.ts), on
 * stand-in servers whose answers the test holds and releases: the orders of events a real pair
 * shows only by chance (a read arriving while a probe is in flight, a standby restarting between
 * its poll and a read). test/failover/standby-reads.e2e.test.ts runs the real thing.
 */
import { describe, expect, it } from 'vitest';
import type { PostgresDriver } from '../../src/storage/postgres-connection.js';
import { StandbyMovedError, StandbyReads } from '../../src/storage/standby-reads.js';

/** A server that answers the probe (primary) or the poll (standby) when the test says. */
class Server {
  readonly driver: PostgresDriver;
  /** Statements received and not yet answered. */
  readonly waiting: Array<(rows: Array<Record<string, unknown>>) => void> = [];
  sent = 0;
  failing: Error | undefined;

  constructor() {
    this.driver = {
      statement: () => {
        this.sent++;
        if (this.failing) return Promise.reject(this.failing);
        return new Promise((resolve) => this.waiting.push(resolve));
      },
      transaction: () => Promise.reject(new Error('not used')),
    };
  }

  /** Answers every statement waiting with `row`. */
  answer(row: Record<string, unknown>): void {
    for (const resolve of this.waiting.splice(0)) resolve([row]);
  }
}

const turn = () => new Promise((resolve) => setTimeout(resolve, 0));
const at = (n: number) => `0/${n.toString(16).toUpperCase()}`;
/** The primary's answer to a probe: at `n` on `timeline`. */
const probe = (n: number, timeline = 1) => ({ lsn: at(n), file: `${timeline.toString(16).padStart(8, '0').toUpperCase()}0000000000000003`, block: '8192' });
/** A standby's answer to a poll: replayed up to `n`, streaming `timeline`, in run `run`. */
const poll = (n: number, timeline: number | null = 1, run = 'run 1') => ({ lsn: at(n), started: run, tli: timeline });

function setUp(waitMs = 0) {
  const primary = new Server();
  const standby = new Server();
  const reads = new StandbyReads(primary.driver, [standby.driver], waitMs);
  const where = (driver: PostgresDriver, started: string | undefined) => Promise.resolve(driver === primary.driver ? 'primary' : `standby ${started}`);
  /** Where one read goes when the primary answers its probe with `probed` and the standby its poll with `polled`. */
  const route = async (probed: Record<string, unknown>, polled: Record<string, unknown>) => {
    const read = reads.read(where);
    await turn();
    primary.answer(probed);
    await turn();
    standby.answer(polled);
    return read;
  };
  return { primary, standby, reads, where, route };
}

describe('standby reads', () => {
  it('serves a read from a standby only once it has replayed what the primary had after the read arrived', async () => {
    const { primary, standby, reads, where } = setUp();
    const first = reads.read(where);
    await turn();
    expect(primary.sent).toBe(1);
    // Arrives while the probe is in flight: that probe may predate a commit this read must see.
    const second = reads.read(where);
    primary.answer(probe(10));
    await turn();
    standby.answer(poll(15));
    await expect(first).resolves.toBe('standby run 1');
    // The second read's own probe, sent after it arrived, finds the primary further on.
    expect(primary.sent).toBe(2);
    primary.answer(probe(20));
    await turn();
    standby.answer(poll(15));
    await expect(second).resolves.toBe('primary');
    expect(reads.stats()).toMatchObject({ standby: 1, primary: 1, probes: 2 });
  });

  it('sends one probe for reads that arrive together', async () => {
    const { primary, standby, reads, where } = setUp();
    const all = Array.from({ length: 50 }, () => reads.read(where));
    await turn();
    expect(primary.sent).toBe(1);
    primary.answer(probe(5));
    await turn();
    expect(standby.sent).toBe(1);
    standby.answer(poll(5));
    expect(new Set(await Promise.all(all))).toEqual(new Set(['standby run 1']));
  });

  it('waits for a lagging standby up to its bound, polling it again', async () => {
    const { primary, standby, reads, where } = setUp(1_000);
    const read = reads.read(where);
    await turn();
    primary.answer(probe(30));
    await turn();
    standby.answer(poll(29));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(standby.sent).toBe(2);
    standby.answer(poll(30));
    await expect(read).resolves.toBe('standby run 1');
    expect(reads.stats()).toMatchObject({ standby: 1, waited: 1 });
  });

  it('sends the read to the primary when the standby restarted since its poll, and leaves the standby alone a while', async () => {
    const { primary, standby, reads } = setUp();
    let attempts = 0;
    const read = reads.read(async (driver, started) => {
      attempts++;
      if (driver === primary.driver) return 'primary';
      expect(started).toBe('run 1');
      throw new StandbyMovedError(); // its snapshot showed run 2
    });
    await turn();
    primary.answer(probe(1));
    await turn();
    standby.answer(poll(9));
    await expect(read).resolves.toBe('primary');
    expect(attempts).toBe(2);
    const again = reads.read(async (driver) => (driver === primary.driver ? 'primary' : 'standby'));
    await turn();
    primary.answer(probe(1));
    await expect(again).resolves.toBe('primary');
    expect(standby.sent).toBe(1);
  });

  it('retries a recovery conflict on the primary, but not an error of the read itself', async () => {
    const { primary, standby, reads } = setUp();
    const conflict = Object.assign(new Error('canceling statement due to conflict with recovery'), { code: '40001' });
    const read = reads.read(async (driver) => {
      if (driver === standby.driver) throw conflict;
      return 'primary';
    });
    await turn();
    primary.answer(probe(1));
    await turn();
    standby.answer(poll(1));
    await expect(read).resolves.toBe('primary');

    const own = new TypeError('a bug in the read');
    const failing = reads.read(async () => {
      throw own;
    });
    await turn();
    primary.answer(probe(1));
    await expect(failing).rejects.toBe(own);
    expect(reads.stats()).toMatchObject({ primary: 1, standby: 0 });
  });

  it('holds a read no longer than its bound when the standby never answers its poll, and probes no more while the standby is down', async () => {
    const { primary, standby, reads, where } = setUp(30);
    const read = reads.read(where);
    await turn();
    primary.answer(probe(1));
    // The standby's poll is never answered (its network stalled).
    await expect(read).resolves.toBe('primary');
    expect(standby.waiting.length).toBe(1);

    standby.failing = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    standby.answer(poll(0));
    const failed = reads.read(where);
    await turn();
    primary.answer(probe(1));
    await expect(failed).resolves.toBe('primary');
    // Down now: straight to the primary, with no probe.
    const probes = primary.sent;
    await expect(reads.read(where)).resolves.toBe('primary');
    expect(primary.sent).toBe(probes);
  });

  it('reads nothing from a standby that streams another timeline than the primary’s, or whose timeline it cannot see', async () => {
    const { route } = setUp();
    // After a failover: the primary on timeline 2, the standby left on 1, past its position.
    expect(await route(probe(10, 2), poll(50, 1))).toBe('primary');
    // A role without pg_read_all_stats sees no timeline.
    expect(await route(probe(10, 2), poll(50, null))).toBe('primary');
    expect(await route(probe(10, 2), poll(50, 2))).toBe('standby run 1');
  });

  it('takes a primary position just past a page header as the page start, where a quiet standby stands', async () => {
    const { route } = setUp();
    for (const [probeAt, replayed] of [
      [0x3000028, 0x3000000], // a new segment's long header
      [0x2002018, 0x2002000], // a page's short header
    ] as const) {
      expect(await route(probe(probeAt), poll(replayed))).toBe('standby run 1');
    }
    // Anywhere else in a page, the position as it is.
    expect(await route(probe(0x2002030), poll(0x2002000))).toBe('primary');
  });

  it('reads from the primary when it cannot be probed, or the standby is not one', async () => {
    const { primary, reads, where, route } = setUp();
    primary.failing = Object.assign(new Error('recovery is in progress'), { code: '55000' });
    await expect(reads.read(where)).resolves.toBe('primary');
    primary.failing = undefined;
    // Promoted: not in recovery.
    expect(await route(probe(1), { lsn: null, started: 'run 1', tli: null })).toBe('primary');
  });
});
