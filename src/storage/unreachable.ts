/**
 * Whether `error` says the store could not be reached or its connection is gone, rather than
 * that a statement was wrong: the socket's own errors, postgres.js's for a closed or ended
 * connection, PostgreSQL's connection class (08) and operator interventions (57P: a terminated
 * backend, a shutdown, a server starting up), any FATAL or PANIC, which the server sends just
 * before it closes, and pg's (and Neon's, which is pg's code) errors for a connection that ended
 * or never came, which carry no code, only their message. After one, a connection takes no more
 * statements, and a request may succeed later: callers answer it as temporary.
 */
export function isUnreachable(error: unknown): boolean {
  const { code, severity, message } = (error ?? {}) as { code?: unknown; severity?: unknown; message?: unknown };
  if (severity === 'FATAL' || severity === 'PANIC') return true;
  if (code === undefined && typeof message === 'string' && PG_LOST_MESSAGES.has(message)) return true;
  return typeof code === 'string' && (LOST_CODES.has(code) || code.startsWith('08') || code.startsWith('57P'));
}

const LOST_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECTION_ENDED',
  'CONNECT_TIMEOUT',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ECONNREFUSED',
]);

/**
 * pg 8's messages for a lost connection: the socket ended under a statement (a crashed server
 * sends no FATAL: `pg_ctl stop -m immediate` only warns), a connection that timed out as it
 * started, or a pool that found none in time.
 */
const PG_LOST_MESSAGES = new Set([
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
]);

/**
 * Whether a request that failed with `error` may succeed if sent again a moment later, without
 * anyone changing anything: the store is unreachable ({@link isUnreachable}), or the connection
 * reached a server that takes no writes (25006, read_only_sql_transaction: a standby, met while a
 * failover promotes it or while a driver's host list still leads to it). The server answers
 * these 503 with `Retry-After`, and a pool drops such a connection rather than reuse it.
 */
export function isTemporary(error: unknown): boolean {
  return isUnreachable(error) || (error as { code?: unknown } | null)?.code === READ_ONLY;
}

const READ_ONLY = '25006';
