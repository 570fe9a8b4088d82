// Runs examples/edge/netlify-edge-function.ts in Deno as Netlify's edge runtime would: its
// `Netlify.env`, its default export called for each request under its `config.path`.
// JavaScript, like the other runtime servers, so that the Node type check leaves it to Deno.
globalThis.Netlify = { env: { get: (name) => Deno.env.get(name) } };
const { default: handler, config } = await import('../../examples/edge/netlify-edge-function.ts');
const base = config.path.replace(/\*$/, '');
Deno.serve({ port: 0, hostname: '127.0.0.1', onListen: ({ port }) => console.log(JSON.stringify({ url: `http://127.0.0.1:${port}${base}` })) }, (request) =>
  new URL(request.url).pathname.startsWith(base) ? handler(request) : new Response('Not found', { status: 404 }),
);
