import { isTemporary, isUnreachable } from './unreachable.js';
import { ConnectionLostError, type PostgresDriver, type PostgresQuery, type TransactionEnd } from './postgres-connection.js';
import { within } from '../base/within.js';

/** A postgres.js client (`postgres(url)`): the part the store uses. */
export interface PostgresJsClient {
  begin<T>(options: string, fn: (sql: PostgresJsTransaction) => Promise<T>): Promise<unknown>;
  /** A statement outside any transaction (postgres.js always has it). */
  unsafe?(query: string, params?: never[], options?: { prepare?: boolean }): PromiseLike<unknown>;
}

/** A postgres.js transaction: the part the store uses. */
export interface PostgresJsTransaction {
  unsafe(query: string, params?: never[], options?: { prepare?: boolean }): PromiseLike<unknown>;
}

/**
 * A driver on a postgres.js client. The closing writes go out together (pipelined) before
 * COMMIT, and with a `pipelined` end, COMMIT goes with them: the space's lock is held one round
 * trip less. (Its `begin` rather than a reserved connection with BEGIN pipelined too: a reserved
 * connection whose backend was killed hangs or crashes postgres.js 3.4, `begin` recovers.)
 */
export function postgresJsDriver(client: PostgresJsClient, options: Required<GuardOptions>): PostgresDriver {
  const transaction = async <T>(mode: string, fn: (query: PostgresQuery) => Promise<TransactionEnd<T>>) => {
    let sent: Array<Promise<unknown>> = [];
    const result = await beginGuarded(
      client,
      mode,
      async (query) => {
        const { result, finish, pipelined = false } = await fn(query);
        sent = finish.map(([text, params]) => query(text, params));
        // postgres.js sends COMMIT once this resolves: at once, or once the writes are answered.
        if (pipelined && finish.length <= 1) for (const statement of sent) statement.catch(() => {});
        else await Promise.all(sent);
        return result;
      },
      options,
    ).catch((error: unknown) => explainPrepared(error, options.prepare));
    // A write that failed made its COMMIT a rollback (or was never sent): nothing was committed.
    await Promise.all(sent).catch((error: unknown) => explainPrepared(error, options.prepare));
    return result;
  };
  return {
    transaction,
    statement: async (text, params) =>
      client.unsafe
        ? ((await unlessStuck(client.unsafe(text, params as never[], { prepare: options.prepare }), options.lostAfterMs, client).then(
            undefined,
            (error: unknown) => explainPrepared(error, options.prepare),
          )) as Array<Record<string, unknown>>)
        : transaction('READ ONLY', async (query) => ({ result: await query(text, params), finish: [] })),
  };
}

/**
 * Rethrows `error`, said plainly when it is a prepared statement the server does not know (or
 * knows already): the sign of a pooler in transaction mode (PgBouncer), which lends each
 * transaction another server connection, in front of a client that prepares statements.
 */
function explainPrepared(error: unknown, prepare: boolean): never {
  const code = (error as { code?: unknown } | null)?.code;
  if (prepare && (code === 'invalid_sql_statement_name' || code === '26000' || code === '42P05')) {
    throw new Error(
      "PostgreSQL does not know a statement this client prepared on another connection, as behind a pooler in transaction mode (PgBouncer): pass `prepare: false` to postgresStorage (or `?prepare=false` in the CLI's URL)",
      { cause: error },
    );
  }
  throw error;
}

/**
 * postgres.js's `begin`, kept from writing to a connection that is gone. postgres.js 3.4 answers a
 * transaction body that fails with ROLLBACK, and runs any statement it is given, on the
 * connection even after its socket closed (a killed backend, a failover, a pooler restart): the
 * write is deferred to a timer, finds no socket, and throws a TypeError no caller can catch,
 * which ends a Node process. So once a statement fails for a lost connection, or `begin` itself
 * has given up (it rejects as soon as the connection closes), the body runs no statement more
 * and never settles: postgres.js then sends nothing. Should the connection live on after all
 * (an error taken for a lost connection that was not), the body fails after `LOST_GRACE_MS`
 * and postgres.js rolls back as usual.
 *
 * A connection on a read-only server (25006: a standby, which postgres.js's
 * `target_session_attrs: 'read-write'` takes for a primary, or one an address led to before
 * it moved) is closed rather than given back to the pool, where every write would fail on it
 * again: the transaction has the server end its session, then goes the way of a lost
 * connection, and the next transaction gets a new connection, from the next host in the list
 * or wherever the address leads now. The caller gets the 25006.
 */
export async function beginGuarded<T>(
  client: PostgresJsClient,
  mode: string,
  body: (query: PostgresQuery) => Promise<T>,
  { prepare = true, lostAfterMs = LOST_AFTER_MS }: GuardOptions = {},
): Promise<T> {
  let lost = false;
  let over = false;
  let readOnly: unknown;
  // The transaction's last statement sent: it knows the connection's backend.
  let lastSent: PromiseLike<unknown> | undefined;
  let ending: ReturnType<typeof setTimeout> | undefined;
  // postgres.js 3.4 can lose a BEGIN among connections cut under it (seen under the suite's
  // network faults: pending minutes after, while new queries ran), and with it every transaction
  // queued behind it in the space. One not started in time is given up: the caller gets a lost
  // connection (503), and should postgres.js start it after all, it ends at once, empty.
  let givenUp = false;
  const { promise: late, reject: giveUp } = deferred<never>();
  const timer = setTimeout(() => {
    givenUp = true;
    giveUp(new ConnectionLostError(`postgres.js did not start the transaction within ${lostAfterMs / 1000} s`));
  }, lostAfterMs);
  (timer as { unref?: () => void }).unref?.();
  const done = client.begin(mode, (tx) => {
    clearTimeout(timer);
    if (givenUp) return Promise.reject(new ConnectionLostError());
    return new Promise<T>((resolve, reject) => {
      const query: PostgresQuery = async (text, params) => {
        if (lost || over || readOnly !== undefined) throw new ConnectionLostError();
        try {
          const sent = tx.unsafe(text, params as never[], { prepare });
          lastSent = sent;
          return (await within(sent, lostAfterMs, () => {
            // postgres.js 3.4 can lose a statement of a connection it reconnected after a cut
            // (seen under the suite's network faults: the server had the statement's first
            // messages and waited for the rest, for ever, in the middle of the transaction,
            // holding its locks; no server timeout ends that wait). The caller is told at once;
            // the backend is ended from another connection, which ends the transaction and
            // frees its locks and postgres.js's connection; the body is never resumed.
            lost = true;
            endBackend(client, sent, lostAfterMs);
            const error = new ConnectionLostError(`postgres.js did not answer a statement of the transaction within ${lostAfterMs / 1000} s`);
            giveUp(error);
            return error;
          })) as Array<Record<string, unknown>>;
        } catch (error) {
          if (isUnreachable(error)) lost = true;
          else if (isTemporary(error)) readOnly ??= error;
          throw error;
        }
      };
      const settle = (finish: () => void) => {
        // postgres.js then sends COMMIT or ROLLBACK, which it can lose as any statement (seen:
        // the backend idle in the transaction for minutes, holding its space's lock): ended
        // as a lost statement is, should the transaction not end within the bound.
        ending = setTimeout(
          () => {
            if (over) return;
            lost = true;
            if (lastSent) endBackend(client, lastSent, lostAfterMs);
            giveUp(new ConnectionLostError(`postgres.js did not end the transaction within ${lostAfterMs / 1000} s`));
          },
          lostAfterMs + (readOnly !== undefined || lost ? LOST_GRACE_MS : 0),
        );
        (ending as { unref?: () => void }).unref?.();
        if (readOnly !== undefined && !lost && !over) {
          // The server closes the session: the failed transaction ends, and a new one that
          // waits does not wait long (idle_in_transaction_session_timeout), so its FATAL comes
          // between statements, with the connection still this transaction's; postgres.js then
          // rejects `begin`. (Not pg_terminate_backend, whose FATAL can come during the
          // statement: postgres.js 3.4 then fails the next connection's first statement with
          // it. Nor a bare ROLLBACK, after which postgres.js hands the connection to others.)
          lost = true;
          tx.unsafe('ROLLBACK; BEGIN; SET LOCAL idle_in_transaction_session_timeout = 1', []).then(undefined, () => {});
        }
        if (!lost && !over) return finish();
        const timer = setTimeout(() => over || finish(), LOST_GRACE_MS);
        (timer as { unref?: () => void }).unref?.();
      };
      body(query).then(
        (value) => settle(() => resolve(value)),
        (error: unknown) => settle(() => reject(error)),
      );
    });
  });
  done.then(undefined, () => {});
  try {
    return (await Promise.race([done, late])) as T;
  } catch (error) {
    throw readOnly ?? error;
  } finally {
    over = true;
    clearTimeout(timer);
    clearTimeout(ending);
  }
}

/**
 * `work`, or a lost connection once `ms` have passed: a statement postgres.js lost track of (see
 * {@link beginGuarded}). With `client`, the backend it waits on is ended too: postgres.js sends
 * later statements behind a busy connection's, which would all wait on it in turn.
 */
export function unlessStuck<T>(work: PromiseLike<T>, ms = LOST_AFTER_MS, client?: PostgresJsClient): Promise<T> {
  return within(work, ms, () => {
    if (client) endBackend(client, work, ms);
    return new ConnectionLostError(`postgres.js did not answer the statement within ${ms / 1000} s`);
  });
}

export interface GuardOptions {
  /** Prepare statements (postgres.js's `prepare`). Default: true. */
  prepare?: boolean;
  /** How long the start of the transaction, one of its statements or its end may go unanswered. Default: {@link LOST_AFTER_MS}. */
  lostAfterMs?: number;
}

/**
 * Ends, from another of `client`'s connections, the backend that `statement` (a postgres.js query,
 * which knows its connection's backend once sent: what its `cancel()` uses) went unanswered on,
 * unless it has started something since `ms / 2` ago (a pid the server has given to a working
 * backend is left alone). Idle or not: postgres.js may have lost the whole statement, and waits
 * on an idle backend then. The statement that ends it can fail or be lost as well (a network
 * cut, the same postgres.js defect): it is sent again, every `ms`, until the server answers it,
 * at most {@link END_ATTEMPTS} times. Best effort: without the right to end it, or with no other
 * connection (`max: 1`), it lives until its connection closes. A backend whose COMMIT waits for a
 * synchronous standby (`SyncRep`) is left alone: ended, its commit would show on this server to
 * every later reader though the standby may never get it (a half-dead primary, failed over), and
 * clients that read it would be told ClientStateNotFound after the failover.
 *
 * Behind a pooler (PgBouncer), the process ID postgres.js knows is the pooler's key, not a
 * backend's, so no backend has it, and the lost transaction would hold its space's lock for as
 * long as its connection lives (seen in the fault-injection suite: a space refusing every write
 * for good once the faults were over). The statement that ends by ID says which backend it ran
 * on; when that is not the ID postgres.js was given, the client is behind a pooler, and the
 * backends of its user and application name stuck in a transaction since `ms / 2` ago (idle in
 * it, or waiting for the rest of a statement) are ended instead: one of them is the lost one,
 * and the others are as stuck (no transaction of the store waits on its client that long).
 */
export function endBackend(client: PostgresJsClient, statement: PromiseLike<unknown>, ms: number, attempt = 1): void {
  const pid = (statement as { state?: { pid?: unknown } | null }).state?.pid;
  if (!client.unsafe || typeof pid !== 'number') return;
  const ended = client.unsafe(
    // Only a backend of this client's own user and application name: with several hosts, this
    // connection may be on another server, where the process ID may be anyone's. As a bigint:
    // a pooler's key is any 32-bit number, past an integer's range half the time.
    "SELECT pg_backend_pid() AS self, ARRAY(SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1::bigint AND state_change < now() - make_interval(secs => $2) AND wait_event IS DISTINCT FROM 'SyncRep' AND usename = current_user AND application_name = current_setting('application_name')) AS ended",
    [pid, ms / 2_000] as never[],
  );
  persist(
    ended,
    ms,
    () => endBackend(client, statement, ms, attempt + 1),
    attempt,
    (rows) => {
      if (pooled(ended, rows)) endStuck(client, ms);
    },
  );
}

/** Behind a pooler: ends the backends of `client`'s user and application name stuck in a transaction since `ms / 2` ago (see {@link endBackend}). */
function endStuck(client: PostgresJsClient, ms: number, attempt = 1): void {
  const ended = client.unsafe!(
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND (state LIKE 'idle in transaction%' OR (state = 'active' AND wait_event = 'ClientRead')) AND state_change < now() - make_interval(secs => $1) AND usename = current_user AND application_name = current_setting('application_name')",
    [ms / 2_000] as never[],
  );
  persist(ended, ms, () => endStuck(client, ms, attempt + 1), attempt);
}

/** Waits for `statement` (one that ends backends) at most `ms`; should it fail or go unanswered, `again` after `ms`, unless this was attempt {@link END_ATTEMPTS}. */
function persist(
  statement: PromiseLike<unknown>,
  ms: number,
  again: () => void,
  attempt: number,
  answered?: (rows: Array<Record<string, unknown>>) => void,
): void {
  unlessStuck(statement, ms).then(
    (rows) => answered?.(rows as Array<Record<string, unknown>>),
    () => {
      if (attempt >= END_ATTEMPTS) return;
      const timer = setTimeout(again, ms);
      (timer as { unref?: () => void }).unref?.();
    },
  );
}

/** Whether `statement`, answered with `rows` (`self`: its backend's process ID), ran behind a pooler: the process ID postgres.js was given for its connection is not its backend's. */
function pooled(statement: PromiseLike<unknown>, rows: Array<Record<string, unknown>>): boolean {
  const given = (statement as { state?: { pid?: unknown } | null }).state?.pid;
  const self = rows[0]?.self;
  return typeof given === 'number' && self !== undefined && self !== null && Number(self) !== given;
}

/** How many times a lost statement's backend is asked to end, at most: minutes, at the default bound. */
const END_ATTEMPTS = 5;

function deferred<T>(): { promise: Promise<T>; reject: (error: unknown) => void } {
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((_, no) => (reject = no));
  promise.then(undefined, () => {});
  return { promise, reject };
}

const LOST_GRACE_MS = 2_000;

/**
 * How long postgres.js may take to start a transaction or answer a statement before its
 * connection is taken for lost. Far above a BEGIN's round trip, or a pull's statement (each
 * range has a LIMIT), and above a wait for a free connection of a pool in ordinary use.
 */
export const LOST_AFTER_MS = 30_000;
