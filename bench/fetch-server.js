// One server for the HTTP benchmark in Deno or Bun, from the built package (`npm run build`):
// `deno run --allow-net --allow-read bench/fetch-server.js <bare|viewsync>` or `bun bench/fetch-server.js ...`.
// Prints one JSON line, `{port, pull}`, like http-server.ts. JavaScript, so both runtimes load it as is.
import { handleRequest, memoryStorage } from '../dist/index.js';

const kind = globalThis.Deno ? Deno.args[0] : process.argv[2];
const { serve } = globalThis.Deno ? await import('../dist/deno.js') : await import('../dist/bun.js');
const json = { 'content-type': 'application/json' };
const ctx = { storage: memoryStorage(), mutators: { put: (tx, { key, value }) => tx.set(key, value) }, onError: () => {} };

// The same data and up-to-date cookie as http-server.ts.
const mutations = Array.from({ length: 100 }, (_, i) => ({ clientID: 'c', id: i + 1, name: 'put', args: { key: `k${i}`, value: i }, timestamp: 0 }));
await handleRequest(
  new Request('http://x/push', {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ pushVersion: 1, clientGroupID: 'g', mutations, profileID: 'p', schemaVersion: '' }),
  }),
  ctx,
);
const probe = { pullVersion: 1, clientGroupID: 'g', cookie: null, profileID: 'p', schemaVersion: '' };
const { cookie } = await (await handleRequest(new Request('http://x/pull', { method: 'POST', headers: json, body: JSON.stringify(probe) }), ctx)).json();

// The floor: parse the body, answer an empty patch with its cookie, on the runtime's own server.
const bare = {
  fetch: async (request) => new Response(JSON.stringify({ cookie: (await request.json()).cookie, lastMutationIDChanges: {}, patch: [] }), { headers: json }),
};
const server =
  kind === 'bare'
    ? globalThis.Deno
      ? Deno.serve({ port: 0, hostname: '127.0.0.1', onListen: () => {} }, bare.fetch).addr
      : Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: bare.fetch })
    : await serve(ctx, { port: 0 });
console.log(JSON.stringify({ port: server.port, pull: { ...probe, cookie } }));
