import { handleRequest, type SyncContext } from '../src/index.js';
import { type CompressionOptions, compressedResponse, compressionSettings } from './compress.js';
import { fitStreamsToProcess } from './descriptors.js';
import { stopGracefully } from './stop.js';
import type { ServeOptions, StopOptions, SyncServer } from './types.js';
import { checkContext } from '../src/context/state.js';

export type { ServeOptions, StopOptions, SyncServer } from './types.js';
export type { CompressionOptions } from './compress.js';

/**
 * Starts `Deno.serve` for both endpoints and resolves once it listens.
 *
 * @example
 * const server = await serve(ctx, { port: 8787 });
 * console.log(`pull: ${server.url}pull`);
 */
export async function serve(ctx: SyncContext, options: DenoServeOptions = {}): Promise<SyncServer> {
  checkContext(ctx);
  // viewsync compresses, as in Bun, rather than Deno.serve: on a 100k-entry pull over loopback
  // Deno's brotli took 3-3.6x the plain pull's time and its gzip left 22% of the bytes; ours
  // leaves 14.5% in 1.3-1.4x. Gzip first: brotli through Deno's node:zlib left 18.6%.
  const compression = compressionSettings(options.compression, ['gzip', 'br']);
  // Asked first: reading without the permission would prompt on a terminal.
  if (Deno.permissions.querySync({ name: 'read', path: '/proc/self/limits' }).state === 'granted') fitStreamsToProcess(ctx);
  const server = Deno.serve(
    // An empty onListen keeps Deno from printing its own "Listening on" line.
    { port: options.port ?? 8787, hostname: options.hostname ?? '127.0.0.1', onListen: () => {}, automaticCompression: false },
    (request) => (compression ? compressedResponse(request, ctx, compression) : handleRequest(request, ctx)),
  );
  const { port, hostname } = server.addr;
  const host = hostname.includes(':') ? `[${hostname}]` : hostname;
  // Deno cannot close connections once it is shutting down: past the bound, `stop` just resolves.
  const stop = (stopOptions: StopOptions = {}) => stopGracefully(ctx, stopOptions, () => server.shutdown());
  return { port, hostname, url: new URL(`http://${host}:${port}/`), stop };
}

/** {@link ServeOptions}, plus compression. */
export interface DenoServeOptions extends ServeOptions {
  /** Compress answers of 1 KiB or more (pulls) with br or gzip when the request accepts it; `false` sends them as they are. Default: on. */
  compression?: false | CompressionOptions;
}

/** The little of Deno's API used here, so that no Deno types need installing. */
declare const Deno: {
  serve(
    options: { port: number; hostname: string; onListen: () => void; automaticCompression: boolean },
    handler: (request: Request) => Promise<Response>,
  ): { readonly addr: { hostname: string; port: number }; shutdown(): Promise<void> };
  permissions: { querySync(descriptor: { name: 'read'; path: string }): { state: string } };
};
