import { handleRequest, type SyncContext } from '../src/index.js';
import { stopGracefully } from './stop.js';
import type { ServeOptions, StopOptions, SyncServer } from './types.js';

export type { ServeOptions, StopOptions, SyncServer } from './types.js';

/**
 * Starts `Deno.serve` for both endpoints and resolves once it listens.
 *
 * @example
 * const server = await serve(ctx, { port: 8787 });
 * console.log(`pull: ${server.url}pull`);
 */
export async function serve(ctx: SyncContext, options: DenoServeOptions = {}): Promise<SyncServer> {
  const server = Deno.serve(
    // An empty onListen keeps Deno from printing its own "Listening on" line. Deno compresses
    // (br or gzip, streams too; never a no-transform poke stream) only when asked: off by
    // default since denoland/deno#35486.
    { port: options.port ?? 8787, hostname: options.hostname ?? '127.0.0.1', onListen: () => {}, automaticCompression: options.compression ?? true },
    (request) => handleRequest(request, ctx),
  );
  const { port, hostname } = server.addr;
  const host = hostname.includes(':') ? `[${hostname}]` : hostname;
  // Deno cannot close connections once it is shutting down: past the bound, `stop` just resolves.
  const stop = (stopOptions: StopOptions = {}) => stopGracefully(ctx, stopOptions, () => server.shutdown());
  return { port, hostname, url: new URL(`http://${host}:${port}/`), stop };
}

/** {@link ServeOptions}, plus whether Deno compresses answers. */
export interface DenoServeOptions extends ServeOptions {
  /** Let Deno.serve compress answers (br or gzip, as the request accepts) it deems worth it; `false` sends them as they are. Default: true. */
  compression?: boolean;
}

/** The little of Deno's API used here, so that no Deno types need installing. */
declare const Deno: {
  serve(
    options: { port: number; hostname: string; onListen: () => void; automaticCompression: boolean },
    handler: (request: Request) => Promise<Response>,
  ): { readonly addr: { hostname: string; port: number }; shutdown(): Promise<void> };
};
