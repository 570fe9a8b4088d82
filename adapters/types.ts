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
  /** Stops listening, closes open connections, and resolves once the server is down. */
  stop(): Promise<void>;
}
