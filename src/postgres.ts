/** `viewsync/postgres`: the PostgreSQL store, and the notifier that carries pokes between instances through the same database. */
export * from './storage/postgres.js';
export { clientPerTransaction, type PgClient } from './storage/client-per-transaction.js';
export { postgresNotifier, type PostgresNotifierClient, type PostgresNotifierOptions } from './poke/postgres-notifier.js';
