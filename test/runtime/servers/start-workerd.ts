import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';

const root = fileURLToPath(new URL('../../..', import.meta.url));

/** What {@link startWorkerd} started. */
export interface WorkerdServer {
  /** Base URL; the endpoints are `<url>pull` and `<url>push`, with `?space=` to pick a space. */
  url: URL;
  /** Disposes of Miniflare, which stops workerd. */
  stop(): Promise<void>;
}

/**
 * Serves `servers/worker.js` (the runtime app over the built `dist/cloudflare.js`) in workerd
 * through Miniflare: a Worker routing to a SQLite-backed Durable Object per space, data in memory.
 * With `requireAuth`, its `authenticate` accepts exactly that Authorization header (else 401).
 * Needs `dist/`, which test/support/global-setup.ts builds; every wait is bounded.
 *
 * @example
 * const server = await startWorkerd();
 * await fetch(new URL('pull', server.url), { method: 'POST', … });
 * await server.stop();
 */
export async function startWorkerd(options: { requireAuth?: string } = {}): Promise<WorkerdServer> {
  if (!existsSync(`${root}dist/cloudflare.js`)) throw new Error(`${root}dist/cloudflare.js is missing: run \`npm run build\` first`);
  const bundle = await build({
    entryPoints: [`${root}test/runtime/servers/worker.js`],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    conditions: ['workerd', 'worker'],
    target: 'es2022',
    logLevel: 'silent',
  });
  const mf = new Miniflare({
    modules: true,
    script: bundle.outputFiles[0]!.text,
    compatibilityDate: '2026-04-01',
    host: '127.0.0.1',
    port: 0,
    durableObjects: { SYNC: { className: 'SyncObject', useSQLite: true } },
    // The worker checks the Authorization header against this token, when one is given.
    bindings: options.requireAuth === undefined ? {} : { REQUIRE_AUTH: options.requireAuth },
  });
  try {
    const url = await withTimeout(mf.ready, 30_000, 'workerd (Miniflare) did not start within 30 s');
    return { url, stop: () => withTimeout(mf.dispose(), 10_000, 'workerd (Miniflare) did not stop within 10 s') };
  } catch (error) {
    await mf.dispose().catch(() => {});
    throw error;
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
