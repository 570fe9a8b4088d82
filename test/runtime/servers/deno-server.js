// Serves the runtime suite's app from the built package in Deno; spawned by ../deno.test.ts.
// JavaScript, so that neither the type check nor Deno needs dist/ typed or `.ts` imports mapped.
import { createContext, memoryStorage } from '../../../dist/index.js';
import { serve } from '../../../dist/deno.js';
import { runtimeOptions } from '../app.ts';

const server = await serve(createContext(runtimeOptions(memoryStorage())), { port: 0 });
console.log(JSON.stringify({ url: server.url.href }));
// The test stops the server by closing stdin; exiting on its own then shows `stop()` let go.
for await (const _ of Deno.stdin.readable);
await server.stop();
