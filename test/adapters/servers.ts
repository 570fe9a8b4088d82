import { afterEach } from 'vitest';
import { type NodeServeOptions, serve, type SyncServer } from '../../adapters/node.js';
import type { SyncContext } from '../../src/index.js';

/**
 * Node servers for one test file, each stopped after the test that started it. Call once at the
 * top of the file: `start` serves on a free port; `track` adds anything else with a `stop`.
 */
export function serversStoppedAfterEach() {
  const servers: Array<{ stop(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.stop()));
  });
  return {
    start: async (ctx: SyncContext, options: NodeServeOptions = {}): Promise<SyncServer> => track(await serve(ctx, { port: 0, ...options })),
    track,
  };

  function track<T extends { stop(): Promise<void> }>(server: T): T {
    servers.push(server);
    return server;
  }
}
