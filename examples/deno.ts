// Deno: `npx deno run --allow-net --allow-env --config examples/deno.json examples/deno.ts`
// (deno.json maps `viewsync` to this repository's source; in your project, `npm:viewsync`).
import { memoryStorage, createContext } from 'viewsync';
import { serve } from 'viewsync/deno';
import { mutators } from './app.js';

const server = await serve(createContext({ storage: memoryStorage(), mutators }), { port: Number(process.env.PORT ?? 8787), hostname: process.env.HOST });
console.log(`viewsync on Deno\n  pullURL: ${new URL('pull', server.url)}\n  pushURL: ${new URL('push', server.url)}`);
