import { spawnSync } from 'node:child_process';
import { freePort, type Started, startCommand } from './command.js';

const COMMAND = process.env.REDIS_SERVER ?? 'redis-server';

/** Whether `redis-server` (or REDIS_SERVER) can be started here. */
export const redisServerAvailable = spawnSync(COMMAND, ['--version']).status === 0;

/** A `redis-server` of a test file's own, on a free port. */
export interface RedisServer {
  /** `redis://127.0.0.1:PORT`. */
  readonly url: string;
  readonly port: number;
  /** Stops it (SIGTERM): its clients lose their connections. */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty (nothing is saved). */
  start(): Promise<void>;
}

/**
 * Starts `redis-server` (Debian's, at /usr/bin/redis-server, or REDIS_SERVER) with nothing
 * saved to disk, and resolves once it accepts connections.
 */
export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort();
  let running: Started | undefined;
  const start = async () => {
    running = await startCommand(COMMAND, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      cwd: process.cwd(),
      ready: /Ready to accept connections/,
      timeoutMs: 15_000,
    });
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    start,
    async stop() {
      const current = running;
      running = undefined;
      await current?.stop();
    },
  };
}
