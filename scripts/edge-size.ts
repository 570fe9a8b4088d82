// The gzipped size of a minimal edge handler with each store, bundled as an edge platform would
// (esbuild, platform browser, minified) from the built package: `npm run build`, then
// `node --import tsx scripts/edge-size.ts`. docs/runtimes.md quotes its output.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const HANDLERS: Record<string, string> = {
  'memory store': `import { createContext, handleRequest, memoryStorage } from 'viewsync';
const ctx = createContext({ storage: memoryStorage(), mutators: {} });
export default (request) => handleRequest(request, ctx);`,
  // As the edge examples connect: a Neon Client per transaction (Neon's rule on edge isolates).
  'PostgreSQL store on Neon\u2019s serverless Client per transaction, storeNotifier': `import { Client } from '@neondatabase/serverless';
import { createContext, handleRequest } from 'viewsync';
import { storeNotifier } from 'viewsync/ops';
import { clientPerTransaction, postgresStorage } from 'viewsync/postgres';
const storage = postgresStorage(clientPerTransaction(() => new Client(process.env.DATABASE_URL)));
const ctx = createContext({ storage, mutators: {}, pokes: { notifier: storeNotifier(storage) } });
export default (request) => handleRequest(request, ctx);`,
};

for (const [name, contents] of Object.entries(HANDLERS)) {
  const result = await build({
    stdin: { contents, resolveDir: root, loader: 'js' },
    bundle: true,
    platform: 'browser',
    format: 'esm',
    minify: true,
    write: false,
    // tsup's chunks are imported bare; esbuild notes that it drops them, which is right here.
    logLevel: 'error',
    define: { 'process.env.DATABASE_URL': '""' },
    plugins: [
      {
        name: 'dist',
        setup: (b) =>
          b.onResolve({ filter: /^viewsync(\/.*)?$/ }, ({ path }) => ({ path: join(root, 'dist', `${path === 'viewsync' ? 'index' : path.slice(9)}.js`) })),
      },
    ],
  });
  const code = result.outputFiles[0]!.contents;
  console.log(`${name}: ${(code.length / 1024).toFixed(1)} KiB minified, ${(gzipSync(code).length / 1024).toFixed(1)} KiB gzipped`);
}
