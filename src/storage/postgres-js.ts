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
 * COMMIT. (Its `begin` rather than a reserved connection with BEGIN pipelined too: a reserved
 * connection whose backend was killed hangs or crashes postgres.js 3.4, `begin` recovers.)
 */
export function postgresJsDriver(client: PostgresJsClient, prepare: boolean): PostgresDriver {
  const transaction = <T>(mode: string, fn: (query: PostgresQuery) => Promise<TransactionEnd<T>>) =>
    beginGuarded(client, mode, async (query) => {
      const { result, finish } = await fn(query);
      await Promise.all(finish.map(([text, params]) => query(text, params)));
      return result;
    }, prepare);
  return {
    transaction,
    statement: async (text, params) =>
      client.unsafe
        ? ((await unlessStuck(client.unsafe(text, params as never[], { prepare }))) as Array<Record<string, unknown>>)
        : transaction('READ ONLY', async (query) => ({ result: await query(text, params), finish: [] })),
  };
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
export async function beginGuarded<T>(client: PostgresJsClient, mode: string, body: (query: PostgresQuery) => Promise<T>, prepare = true): Promise<T> {
  let lost = false;
  let over = false;
  let readOnly: unknown;
  // postgres.js 3.4 can lose a BEGIN among connections cut under it (seen under the suite's
  // network faults: pending minutes after, while new queries ran), and with it every transaction
  // queued behind it in the space. One not started in time is given up: the caller gets a lost
  // connection (503), and should postgres.js start it after all, it ends at once, empty.
  let givenUp = false;
  const { promise: late, reject: giveUp } = deferred<never>();
  const timer = setTimeout(() => {
    givenUp = true;
    giveUp(new ConnectionLostError(`postgres.js did not start the transaction within ${STUCK_MS / 1000} s`));
  }, STUCK_MS);
  (timer as { unref?: () => void }).unref?.();
  const done = client.begin(
    mode,
    (tx) => {
      clearTimeout(timer);
      if (givenUp) return Promise.reject(new ConnectionLostError());
      return new Promise<T>((resolve, reject) => {
        const query: PostgresQuery = async (text, params) => {
          if (lost || over || readOnly !== undefined) throw new ConnectionLostError();
          try {
            return (await tx.unsafe(text, params as never[], { prepare })) as Array<Record<string, unknown>>;
          } catch (error) {
            if (isUnreachable(error)) lost = true;
            else if (isTemporary(error)) readOnly ??= error;
            throw error;
          }
        };
        const settle = (finish: () => void) => {
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
        body(query).then((value) => settle(() => resolve(value)), (error: unknown) => settle(() => reject(error)));
      });
    },
  );
  done.then(undefined, () => {});
  try {
    return (await Promise.race([done, late])) as T;
  } catch (error) {
    throw readOnly ?? error;
  } finally {
    over = true;
    clearTimeout(timer);
  }
}

/** `work`, or a lost connection once `STUCK_MS` have passed: a statement postgres.js lost track of (see {@link beginGuarded}). */
export function unlessStuck<T>(work: PromiseLike<T>): Promise<T> {
  return within(work, STUCK_MS, () => new ConnectionLostError(`postgres.js did not answer the statement within ${STUCK_MS / 1000} s`));
}

function deferred<T>(): { promise: Promise<T>; reject: (error: unknown) => void } {
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((_, no) => (reject = no));
  promise.then(undefined, () => {});
  return { promise, reject };
}

const LOST_GRACE_MS = 2_000;

/**
 * How long postgres.js may take to start a transaction or answer a statement outside one before
 * it is taken for lost. Far above a BEGIN's round trip, or a pull's statement (each range has a
 * LIMIT), and above a wait for a free connection of a pool in ordinary use.
 */
const STUCK_MS = 30_000;

