import { handleRequest, type SyncContext } from '../src/index.js';
import { refuseRenamed } from '../src/base/renamed.js';
import { type CompressionOptions, compressedResponse, compressionSettings } from './compress.js';
import { fitStreamsToProcess } from './descriptors.js';
import { stopGracefully } from './stop.js';
import { IDLE_TIMEOUT_MS, type ServeOptions, type StopOptions, type SyncServer } from './types.js';
import { checkContext } from '../src/context/state.js';

export type { ServeOptions, StopOptions, SyncServer } from './types.js';
export type { CompressionOptions } from './compress.js';

/**
 * Starts `Bun.serve` for both endpoints and resolves once it listens.
 *
 * @example
 * const server = await serve(ctx, { port: 8787 });
 * console.log(`pull: ${server.url}pull`);
 */
export async function serve(ctx: SyncContext, options: BunServeOptions = {}): Promise<SyncServer> {
  checkContext(ctx);
  // Bun.serve compresses nothing itself. Gzip first: Bun's brotli took 1.7-2x the time of a
  // plain 100k-entry pull over loopback, its gzip 1.0-1.5x, for the same bytes.
  const compression = compressionSettings(options.compression, ['gzip', 'br']);
  const idleTimeout = idleSeconds(options);
  fitStreamsToProcess(ctx);
  const server = Bun.serve({
    port: options.port ?? 8787,
    hostname: options.hostname ?? '127.0.0.1',
    idleTimeout,
    fetch: (request) => (compression ? compressedResponse(request, ctx, compression) : handleRequest(request, ctx)),
  });
  const { port, hostname, url } = server;
  // `stop(false)` waits for requests in flight; `stop(true)` closes every connection at once.
  const stop = (stopOptions: StopOptions = {}) =>
    stopGracefully(
      ctx,
      stopOptions,
      () => server.stop(false),
      () => server.stop(true),
    );
  return { port, hostname, url: new URL(url), stop };
}

/** {@link ServeOptions}, plus Bun's idle timeout and compression. */
export interface BunServeOptions extends ServeOptions {
  /** Milliseconds a connection may send and receive nothing, rounded up to whole seconds, at most 255,000 (Bun's bound); 0: no limit. Keep it above the poke heartbeat (15 s). Default: 60,000, as on Node (Bun's own: 10 s). */
  idleTimeoutMs?: number;
  /** Compress answers of 1 KiB or more (pulls) with br or gzip when the request accepts it; `false` sends them as they are. Default: on. */
  compression?: false | CompressionOptions;
}

/** Bun counts its idle timeout in whole seconds, 0 to 255. */
function idleSeconds(options: BunServeOptions): number {
  refuseRenamed(options, 'options', { idleTimeout: 'idleTimeoutMs' });
  const ms = options.idleTimeoutMs ?? IDLE_TIMEOUT_MS;
  if (!(ms >= 0 && ms <= 255_000)) throw new RangeError(`idleTimeoutMs must be between 0 and 255,000 (Bun's bound, in whole seconds), got ${ms}`);
  return Math.ceil(ms / 1000);
}

/** The little of Bun's API used here, so that no Bun types need installing. */
declare const Bun: {
  serve(options: { port: number; hostname: string; idleTimeout: number; fetch: (request: Request) => Promise<Response> }): {
    readonly port: number;
    readonly hostname: string;
    readonly url: URL;
    stop(closeActiveConnections?: boolean): Promise<void>;
  };
};
