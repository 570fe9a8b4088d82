/**
 * Whether `error` says the store could not be reached or its connection is gone, rather than
 * that a statement was wrong: the socket's own errors, postgres.js's for a closed or ended
 * connection, PostgreSQL's connection class (08) and operator interventions (57P: a terminated
 * backend, a shutdown, a server starting up), and any FATAL or PANIC, which the server sends just
 * before it closes. After one, a connection takes no more statements, and a request may succeed
 * later: callers answer it as temporary.
 */
export function isUnreachable(error: unknown): boolean {
  const { code, severity } = (error ?? {}) as { code?: unknown; severity?: unknown };
  if (severity === 'FATAL' || severity === 'PANIC') return true;
  return typeof code === 'string' && (LOST_CODES.has(code) || code.startsWith('08') || code.startsWith('57P'));
}

const LOST_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECTION_ENDED', 'CONNECT_TIMEOUT', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNREFUSED']);

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
