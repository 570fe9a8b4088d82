import { beginGuarded } from '../storage/postgres-js.js';
import type { Notifier } from './notifier.js';
import { localNotifier } from './notifier.js';

/** A postgres.js client (`postgres(url)`): the part {@link postgresNotifier} uses. */
export interface PostgresNotifierClient {
  listen(channel: string, onNotify: (payload: string) => void, onListen?: () => void): PromiseLike<{ unlisten(): PromiseLike<unknown> }>;
  begin<T>(
    options: string,
    fn: (sql: { unsafe(query: string, params?: never[], options?: { prepare?: boolean }): PromiseLike<unknown> }) => Promise<T>,
  ): Promise<unknown>;
}

/** Options for {@link postgresNotifier}. */
export interface PostgresNotifierOptions {
  /** The `LISTEN`/`NOTIFY` channel; apps sharing a database but not spaces may use their own. Default: `viewsync`. */
  channel?: string;
}

/**
 * A notifier for server instances that share one PostgreSQL database: a push on one instance
 * pokes the streams of that space on every instance, through `NOTIFY` and `LISTEN` on one
 * channel (postgres.js keeps one connection listening and reconnects it). Streams of the
 * instance that pushed are poked at once, without waiting for the round trip. When the
 * listening connection comes back after a drop, every space with streams here is poked, since
 * its notices in between are lost. A space's name must fit in a notice (under 8,000 bytes;
 * `limits.idBytes` is 512).
 *
 * @example
 * const sql = postgres(process.env.DATABASE_URL!, { fetch_types: false });
 * const ctx = createContext({ storage: postgresStorage(sql), mutators, pokes: { notifier: postgresNotifier(sql) } });
 */
export function postgresNotifier(sql: PostgresNotifierClient, options: PostgresNotifierOptions = {}): Notifier & { close(): Promise<void> } {
  const channel = options.channel ?? 'viewsync';
  const local = localNotifier();
  // Notices say which instance sent them, so that one's own come back to nobody.
  const self = Math.random().toString(36).slice(2, 10);
  let listening: Promise<{ unlisten(): PromiseLike<unknown> }> | undefined;
  let connections = 0;

  const listen = () =>
    (listening ??= Promise.resolve(
      sql.listen(
        channel,
        (payload) => {
          const space = spaceOf(payload, self);
          if (space !== undefined) local.notify(space);
        },
        () => {
          if (connections++ > 0) local.notifyAll();
        },
      ),
    ).catch((error: unknown) => {
      listening = undefined;
      throw error;
    }));

  return {
    async notify(space, detail) {
      // What the change touched goes to this process's streams only: a notice carries the name.
      local.notify(space, detail);
      // Not postgres.js's own `notify`, nor a bare `begin`: right after a backend was killed,
      // either could throw from a timer inside postgres.js 3.4 (see beginGuarded).
      await beginGuarded(sql, '', (query) => query('SELECT pg_notify($1, $2)', [channel, payloadOf(self, space)]));
    },
    async subscribe(space, listener) {
      await listen();
      return local.subscribe(space, listener);
    },
    async subscribeAll(listener) {
      await listen();
      return local.subscribeAll(listener);
    },
    async close() {
      const current = listening;
      listening = undefined;
      if (current) await (await current.catch(() => undefined))?.unlisten();
    },
  };
}

/**
 * A notice's payload: the sending instance, then the space. A notice is text, which cannot hold
 * U+0000, so a space with one goes as JSON after `!` instead of as it is after `:` (instances of
 * an older version take such a notice for a space nobody has: a missed poke, not a wrong one).
 */
function payloadOf(self: string, space: string): string {
  return space.includes('\u0000') ? `${self}!${JSON.stringify(space)}` : `${self}:${space}`;
}

/** The space a notice names, unless it came from `self` (or is not one of ours). */
function spaceOf(payload: string, self: string): string | undefined {
  const at = payload.search(/[:!]/);
  if (at < 0 || payload.slice(0, at) === self) return undefined;
  if (payload[at] === ':') return payload.slice(at + 1);
  try {
    const space: unknown = JSON.parse(payload.slice(at + 1));
    return typeof space === 'string' ? space : undefined;
  } catch {
    return undefined;
  }
}
