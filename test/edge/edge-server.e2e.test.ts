import { EdgeRuntime } from 'edge-runtime';
import { expect, it } from 'vitest';
import { serveEdgeRuntime } from './edge-server.js';

// The interop suite's restart tests stop a server while a client pulls from it every 100 ms.
it('a stop ends while a client keeps reusing a kept-alive connection that was busy when the stop began', async () => {
  const runtime = new EdgeRuntime({
    initialCode: `addEventListener('fetch', (event) => event.respondWith(new Promise((resolve) => setTimeout(() => resolve(new Response('ok')), 200))));`,
  });
  const server = await serveEdgeRuntime(runtime);
  let stopped = false;
  let busy = false;
  const answered: number[] = [];
  // One client, one connection at a time, as a client's pulls are: undici keeps it alive.
  const client = (async () => {
    while (!stopped) {
      busy = true;
      answered.push(
        await fetch(server.url).then(
          async (response) => (await response.text(), response.status),
          () => 0,
        ),
      );
      busy = false;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  try {
    // A request under way on a kept-alive connection: the second one, so that the connection was kept.
    await expect.poll(() => answered.length > 0 && busy, { timeout: 30_000, interval: 5 }).toBe(true);
    const closing = server.close().then(() => 'closed');
    // About 200 ms here, idle; 10 s catches the stop that never ends (it waited forever).
    const hang = new Promise((resolve) => setTimeout(resolve, 10_000, 'still open after 10 s'));
    expect(await Promise.race([closing, hang])).toBe('closed');
    expect(answered).toContain(200);
  } finally {
    stopped = true;
    await client;
  }
});
