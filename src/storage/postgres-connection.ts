/**
 * What the PostgreSQL drivers (postgres.js, pg-style pools, PGlite) share: the shape of a driver,
 * and the error a statement gets once its transaction's connection is gone.
 */

/** Runs one statement with positional parameters; resolves to its rows. */
export type PostgresQuery = (query: string, params: readonly unknown[]) => Promise<Array<Record<string, unknown>>>;

/** What a transaction's body resolves to: its result, and the statements to run just before COMMIT. */
export interface TransactionEnd<T> {
  result: T;
  finish: ReadonlyArray<readonly [query: string, params: readonly unknown[]]>;
  /**
   * COMMIT may go out with `finish`, before its answer (postgres.js: one round trip, not two).
   * Only for at most one statement on a server that takes writes: should it fail, at the server
   * (the transaction is then aborted, and its COMMIT rolls back) or before it was sent (then
   * nothing of the writes was), nothing of them is committed, and the transaction still rejects.
   */
  pipelined?: boolean;
}

/** Runs transactions on either client. */
export interface PostgresDriver {
  /** Runs `fn` between `BEGIN <mode>` and COMMIT (ROLLBACK if anything fails). */
  transaction<T>(mode: string, fn: (query: PostgresQuery) => Promise<TransactionEnd<T>>): Promise<T>;
  /** Runs one statement on its own, outside any transaction: one round trip, one snapshot. */
  statement: PostgresQuery;
}

/** A statement refused, or a call given up, because its connection is gone: nothing of its transaction was committed. */
export class ConnectionLostError extends Error {
  override name = 'ConnectionLostError';
  readonly code = 'CONNECTION_CLOSED';
  constructor(why = 'The connection of this transaction was lost') {
    super(`${why}; nothing of it was committed`);
  }
}
