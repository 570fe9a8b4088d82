import type { Notifier } from './notifier.js';

/** How pokes are sent: see {@link SyncOptions.pokes}. */
export interface PokeOptions {
  /** Where changes are heard and announced. Default: this process only (one notifier per store). */
  notifier?: Notifier;
  /** Milliseconds between heartbeats on an idle stream, so proxies keep it open. Default: 15,000. */
  heartbeatMs?: number;
  /**
   * Pokes of one space are at least this many milliseconds apart: the first change of a burst
   * pokes at once, the rest of it once more when the time is up. Default: 50.
   */
  coalesceMs?: number;
  /**
   * Poke streams this context keeps open at once; past it, a user with fewer streams than the
   * user with the most takes that user's oldest, and anyone else gets 503 with `Retry-After`.
   * Default: 20,000, or less where the adapter can read the process's file-descriptor limit
   * (Node, Bun, and Deno with read access to `/proc`): three quarters of it, less 100.
   */
  maxStreams?: number;
  /**
   * Poke streams one user (the ID `authenticate` returns) keeps open or opening at once; past it,
   * 429 with `Retry-After`. Without `authenticate` there is no user to count by, and only
   * `maxStreams` bounds the streams. Default: 100 (tabs and devices of one person).
   */
  maxStreamsPerUser?: number;
  /**
   * Milliseconds a stream stays open; then it ends with an SSE `retry` field and its client
   * reconnects (and pulls). A client that stopped reading while its kernel still takes the
   * heartbeats looks alive to the server: this is how long it can hold a connection. Each stream
   * draws its own age from the last quarter below this, so reconnects spread; it is checked at
   * each heartbeat. Default: 600,000 (10 minutes).
   */
  maxStreamAgeMs?: number;
  /**
   * The secret poke tokens are signed with (32 characters or more, the same on every instance):
   * with it, `GET …/poke-token` gives the user `authenticate` names a token, and `…/poke?poke_token=`
   * opens that user's stream without an `Authorization` header, as a browser's `EventSource` must
   * (see `pokeToken`). Default: none, no tokens.
   */
  tokenSecret?: string;
  /** Milliseconds a poke token is good for. Default: 3,600,000 (an hour). */
  tokenTtlMs?: number;
}
