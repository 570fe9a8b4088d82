import type { PostgresDriver } from './postgres-connection.js';
import { isUnreachable } from './unreachable.js';
import { within } from '../base/within.js';

/**
 * Reads served by PostgreSQL streaming standbys, never older than the primary was when they
 * were asked for.
 *
 * A read (a pull's, any read-only transaction's) may go to a standby only once that standby has
 * replayed the primary's WAL up to where the primary's WAL was at some moment after the read
 * was asked for. Then the standby holds every commit acknowledged before the read: the client
 * group's last push (a client reads its own writes), the version any cookie a client holds
 * names and the lastMutationIDs of then (nothing goes backwards), and whatever a poke announced
 * (a poked client never pulls an answer older than the poke, which no later poke might
 * correct). Checking the cookie alone would not be enough: a pull answered from behind the
 * change it was poked for would leave the client behind until the next write.
 *
 * How, per read:
 * 1. The primary's WAL insert position, asked for after the read arrived. One probe serves every
 *    read that arrived before it was sent: at most one is in flight, and reads that come while
 *    it is wait for the next, so the primary answers one cheap statement per batch of reads,
 *    not one per read.
 * 2. A standby whose replay position has reached it, as last polled (`pg_last_wal_replay_lsn`),
 *    polled again as needed for at most `waitMs`; several are taken in turn. None in time: the
 *    primary serves the read, as it does when a standby fails (a lost connection, a query
 *    cancelled by a recovery conflict) or no probe can be had.
 *    Only a standby that streams the primary's timeline counts: after a failover, one left on
 *    the abandoned timeline may hold commits the new primary never had.
 * 3. The read on the standby checks, in its own snapshot, that the server is still in the run
 *    it was polled in ({@link RUN}): a standby restarted or reinitialised after a crash may open
 *    at an older position than it had replayed, and a replay position is only ever a lower bound
 *    for the run of the server that reported it.
 */
export class StandbyReads {
  readonly #primary: PostgresDriver;
  readonly #standbys: Standby[];
  readonly #waitMs: number;
  #next = 0;
  // The probe reads may join (not yet sent), and the one in flight.
  #open: Promise<Position> | undefined;
  #inFlight: Promise<unknown> | undefined;
  readonly #stats: StandbyStats = { standby: 0, primary: 0, waited: 0, probes: 0 };

  constructor(primary: PostgresDriver, standbys: readonly PostgresDriver[], waitMs: number) {
    this.#primary = primary;
    this.#standbys = standbys.map((driver) => new Standby(driver));
    this.#waitMs = waitMs;
  }

  /**
   * Runs `read` on a standby that is caught up, or else on the primary. `read` gets the server
   * and, on a standby, the start time its snapshot must show (see {@link StandbyMovedError}); it
   * may run twice, on a standby then on the primary.
   */
  async read<T>(read: (driver: PostgresDriver, started: string | undefined) => Promise<T>): Promise<T> {
    // With no standby to read from, the primary at once: no probe.
    const target = this.#standbys.some((standby) => standby.up()) ? await this.#probe().catch(() => undefined) : undefined;
    const standby = target === undefined ? undefined : await this.#caughtUp(target);
    if (standby) {
      const started = standby.started!;
      try {
        const result = await read(standby.driver, started);
        this.#stats.standby++;
        return result;
      } catch (error) {
        if (!isStandbyFailure(error)) throw error;
        if (isUnreachable(error) || error instanceof StandbyMovedError) standby.fail();
      }
    }
    this.#stats.primary++;
    return read(this.#primary, undefined);
  }

  /** Reads served so far, by where. */
  stats(): StandbyStats {
    return { ...this.#stats };
  }

  #probe(): Promise<Position> {
    if (this.#open) return this.#open;
    const open = new Promise<Position>((resolve, reject) => {
      const send = () => {
        // From here, a read that arrives joins the next probe: this one may be older than it.
        this.#open = undefined;
        this.#stats.probes++;
        const sent = this.#primary.statement(PROBE, []).then(([row]) => probed(row));
        // The standbys are polled meanwhile, not after: any poll's position is good for as long
        // as its server runs, and on a standby that keeps up this one is often far enough.
        for (const standby of this.#standbys) if (standby.up()) void standby.poll();
        sent.then(resolve, reject);
        this.#inFlight = sent.then(
          () => {},
          () => {},
        );
      };
      if (this.#inFlight) void this.#inFlight.then(send);
      else queueMicrotask(send);
    });
    this.#open = open;
    open.catch(() => {});
    return open;
  }

  /** A standby that has replayed up to `target`, polled until `waitMs` has passed; undefined if none. */
  async #caughtUp(target: Position): Promise<Standby | undefined> {
    const deadline = Date.now() + this.#waitMs;
    for (let round = 0; ; round++) {
      const ready = this.#standbys.filter((standby) => standby.up() && standby.reached(target));
      if (ready.length > 0) return ready[this.#next++ % ready.length];
      const polling = this.#standbys.filter((standby) => standby.up());
      const left = deadline - Date.now();
      // One poll at least, whatever the bound: a standby on loopback answers in well under a millisecond.
      if (polling.length === 0 || (round > 0 && left <= 0)) return undefined;
      if (round === 1) this.#stats.waited++;
      // The first polls at once (a standby that keeps up is a moment behind); then a pause
      // between, so a lagging standby is not asked a thousand times for the wait.
      if (round >= POLLS_AT_ONCE) await sleep(Math.min(POLL_PAUSE_MS, left));
      // Until any poll answers, bounded by the wait: a standby whose network stalls holds no
      // read longer, nor keeps it from another that answers.
      await within(Promise.race(polling.map((standby) => standby.poll())), Math.max(left, 1), () => undefined).catch(() => {});
    }
  }
}

/** Reads {@link StandbyReads} served, by where, and the primary's probes. */
export interface StandbyStats {
  /** Reads a standby answered. */
  standby: number;
  /** Reads the primary answered: no standby caught up in time, or one failed. */
  primary: number;
  /** Reads that waited for a standby to catch up (served by it or not). */
  waited: number;
  /** Statements sent to the primary for its WAL position: one per batch of reads. */
  probes: number;
}

/** A standby's snapshot showed another server run than the one polled: the read goes to the primary. */
export class StandbyMovedError extends Error {
  override name = 'StandbyMovedError';
  constructor() {
    super('The standby restarted between its poll and the read');
  }
}

/**
 * The server's run: its start time, and when its statistics were last reset, which a crash of
 * one of its processes does without a new start time (the server reinitialises, and may open
 * at an older position than it had replayed). A read on a standby shows it first, in its
 * snapshot; it must be the run its replay position was polled in.
 */
export const RUN = "SELECT pg_postmaster_start_time()::text || ' ' || coalesce((SELECT stats_reset FROM pg_stat_bgwriter)::text, '') AS started";

/** Throws {@link StandbyMovedError} unless `rows` (of {@link RUN}) show the run `started`. */
export function checkStarted(rows: ReadonlyArray<Record<string, unknown>>, started: string): void {
  if (rows[0]?.started !== started) throw new StandbyMovedError();
}

/** One standby: its replay position and timeline as last polled, in the run it was polled in. */
class Standby {
  readonly driver: PostgresDriver;
  #replayed: Position | undefined;
  started: string | undefined;
  #poll: Promise<void> | undefined;
  #downUntil = 0;

  constructor(driver: PostgresDriver) {
    this.driver = driver;
  }

  up(): boolean {
    return Date.now() >= this.#downUntil;
  }

  /** Whether it had replayed up to `target`, on the primary's timeline, when last polled. */
  reached(target: Position): boolean {
    return this.#replayed !== undefined && this.#replayed.timeline === target.timeline && this.#replayed.lsn >= target.lsn;
  }

  /** Left alone for a while: it could not be reached, or restarted. */
  fail(): void {
    this.#downUntil = Date.now() + DOWN_MS;
    this.#replayed = undefined;
  }

  /** Polls its replay position (one poll in flight, which later callers join). */
  poll(): Promise<void> {
    this.#poll ??= this.driver
      .statement(POLL, [])
      .then(([row]) => {
        // Not a standby (promoted, or never one), no stream from the primary, or no right to
        // see its timeline: nothing is read from it.
        const streaming = typeof row?.lsn === 'string' && typeof row.tli === 'number';
        this.#replayed = streaming ? { lsn: lsn(row.lsn), timeline: row.tli as number } : undefined;
        this.started = row?.started as string | undefined;
      })
      .catch(() => this.fail())
      .finally(() => (this.#poll = undefined));
    return this.#poll;
  }
}

/** A place in the WAL: a position on a timeline. */
interface Position {
  lsn: bigint;
  timeline: number;
}

/**
 * The primary's position from {@link PROBE}. One just past a page's header is taken as the
 * page's start, where the last record before it ended: that is where a standby's replay stands
 * when nothing was written since (no record both starts and ends within a header's length after
 * a page boundary, so none is skipped).
 */
function probed(row: Record<string, unknown> | undefined): Position {
  const at = lsn(row?.lsn);
  const offset = at % BigInt(Number(row?.block));
  const file = typeof row?.file === 'string' ? row.file : '';
  const timeline = Number.parseInt(file.slice(0, 8), 16);
  if (!Number.isSafeInteger(timeline)) throw new Error(`Not a WAL file name: ${file}`);
  return { lsn: offset === SHORT_HEADER || offset === LONG_HEADER ? at - offset : at, timeline };
}

/** `X/Y`, a pg_lsn as text, as a number. */
function lsn(text: unknown): bigint {
  const match = typeof text === 'string' ? /^([0-9A-F]{1,8})\/([0-9A-F]{1,8})$/i.exec(text) : null;
  if (!match) throw new Error(`Not a WAL position: ${String(text)}`);
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}

/**
 * An error of the standby rather than of the read: its connection, a query cancelled by a
 * recovery conflict (40001, 40P01), or a server that restarted. The primary then serves the read;
 * any other error is the read's own, and is the caller's.
 */
function isStandbyFailure(error: unknown): boolean {
  if (error instanceof StandbyMovedError || isUnreachable(error)) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return code === '40001' || code === '40P01';
}

// The insert position, not the flushed one: a commit acknowledged without waiting for its flush
// (synchronous_commit off) is visible to reads before it is flushed. Its WAL file's name starts
// with its timeline.
const PROBE = "SELECT l::text AS lsn, pg_walfile_name(l) AS file, current_setting('wal_block_size') AS block FROM pg_current_wal_insert_lsn() l";
/**
 * The standby's replay position, the run it is in (see {@link RUN}), and the timeline it
 * streams: a standby left on a timeline a failover abandoned can be past the new primary's
 * position with commits the new primary never had. `pg_stat_wal_receiver` shows the timeline
 * only to a role with `pg_read_all_stats`.
 */
const POLL = `SELECT pg_last_wal_replay_lsn()::text AS lsn, (${RUN}) AS started, (SELECT received_tli FROM pg_stat_wal_receiver) AS tli`;
const [SHORT_HEADER, LONG_HEADER] = [24n, 40n];
const POLLS_AT_ONCE = 3;
const POLL_PAUSE_MS = 2;
/** How long a standby that failed is left alone before it is polled again. */
const DOWN_MS = 1_000;

const sleep = (ms: number) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    (timer as { unref?: () => void }).unref?.();
  });
