import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    backend: 'src/backend.ts',
    ops: 'src/ops.ts',
    node: 'adapters/node.ts',
    deno: 'adapters/deno.ts',
    bun: 'adapters/bun.ts',
    cloudflare: 'adapters/cloudflare.ts',
    sqlite: 'src/storage/sqlite.ts',
    postgres: 'src/postgres.ts',
    redis: 'src/redis.ts',
    testing: 'src/testing/index.ts',
    store: 'src/store.ts',
    protocol: 'src/protocol.ts',
    client: 'src/client/index.ts',
    cli: 'src/cli/bin.ts',
  },
  format: ['esm', 'cjs'],
  // Shared chunks, so that every entry uses the one copy of the core (one HTTPError class).
  splitting: true,
  // The Node adapter needs Node's types; the root entry's own check (tsconfig.json) has none.
  dts: { compilerOptions: { types: ['node'] } },
  clean: true,
  // No source maps: they would point at sources the package does not ship.
  sourcemap: false,
  target: 'es2022',
  platform: 'neutral',
  external: [/^node:/, /^bun:/],
  // Keep `node:http` as written: bare `http` would not resolve in Deno or Bun's Node mode.
  removeNodeProtocol: false,
});
