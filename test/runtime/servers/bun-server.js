// Serves the runtime suite's app from the built package in Bun; spawned by ../bun.test.ts.
// JavaScript, so that the type check does not need dist/, which is built only when tests start.
import { createContext, memoryStorage } from '../../../dist/index.js';
import { serve } from '../../../dist/bun.js';
import { runtimeOptions } from '../app.ts';

const idle = process.env.IDLE_TIMEOUT_MS;
const server = await serve(createContext(runtimeOptions(memoryStorage())), { port: 0, ...(idle && { idleTimeoutMs: Number(idle) }) });
console.log(JSON.stringify({ url: server.url.href }));
// The test stops the server by closing stdin; exiting on its own then shows `stop()` let go.
for await (const _ of Bun.stdin.stream());
await server.stop();
