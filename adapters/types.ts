/**
 * How long a connection may send and receive nothing before the server closes it, by default, in
 * every runtime that has the setting (Node, Bun): a client that stops reading a large pull holds
 * its connection this long. Above the poke heartbeat (15 s), so an idle poke stream stays open.
 */
export const IDLE_TIMEOUT_MS = 60_000;

/** Where {@link SyncServer}s listen; the same options in every runtime. */
export interface ServeOptions {
  /** The port; 0 picks a free one. Default: 8787. */
  port?: number;
  /** The interface to listen on. Default: `127.0.0.1`. */
  hostname?: string;
}

/** A running server, the same shape in every runtime. */
export interface SyncServer {
  /** The port it listens on (the one picked, when 0 was asked for). */
  readonly port: number;
  /** The interface it listens on. */
  readonly hostname: string;
  /** Its base URL; the endpoints are `new URL('pull', url)` and `new URL('push', url)`. */
  readonly url: URL;
  /**
   * Stops gracefully, for a deploy: drains the context (`drain`: poke streams end with a reconnect
   * hint, the health check fails), stops accepting connections, lets the requests in flight
   * finish, then resolves. Connections still open after `timeoutMs` are closed. Pushes are safe
   * either way: one whose answer never arrived is retried by its client and applied once.
   */
  stop(options?: StopOptions): Promise<void>;
}

/** Options for {@link SyncServer.stop}. */
export interface StopOptions {
  /** Milliseconds requests in flight have to finish before their connections are closed. Default: 10,000. */
  timeoutMs?: number;
  /** Milliseconds a poke stream's client waits before it reconnects, on average (see `drain`). Default: 1,000. */
  retryMs?: number;
}
