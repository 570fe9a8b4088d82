/**
 * The client side of the poke benchmark over raw `node:http`: the store server in a process of
 * its own, JSON POSTs, and Server-Sent Events poke streams. Raw sockets, not `viewsync/client`,
 * so that what is timed is the server and the wire, not a client library.
 */
import { spawn } from 'node:child_process';
import { type Agent, type ClientRequest, request } from 'node:http';
import { createInterface } from 'node:readline';

const root = new URL('..', import.meta.url).pathname;

/** A store server (bench/store-server.ts) running in a child process. */
export interface StoreServer {
  port: number;
  /** The same store served with `shareReads: false`. */
  unsharedPort: number;
  /** The same store with `shareReads: false` and no `readMany`: each pull in a transaction of its own. */
  alonePort: number;
  pid: number;
  /** The server's memory after a full collection (it runs with `--expose-gc`). */
  memory(): Promise<NodeJS.MemoryUsage>;
  stop(): Promise<void>;
}

/**
 * Starts bench/store-server.ts for `kind` with `env` added to this process's environment.
 * `SERVER_NODE_ARGS` adds flags to its `node` (`--cpu-prof`, which NODE_OPTIONS refuses);
 * `SERVER_ROOT` runs the store server of another checkout (a baseline from before a change).
 */
export async function startStoreServer(kind: string, where: string | undefined, env: Record<string, string>): Promise<StoreServer> {
  const flags = process.env.SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  // The IPC channel carries memory figures (see store-server.ts); gc settles them.
  const child = spawn(
    process.execPath,
    ['--expose-gc', ...flags, '--import', 'tsx', `${process.env.SERVER_ROOT ?? root}bench/store-server.ts`, kind, ...(where ? [where] : [])],
    {
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
      env: { ...process.env, ...env },
    },
  );
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
  });
  return {
    ...(JSON.parse(line) as { port: number; unsharedPort: number; alonePort: number }),
    pid: child.pid!,
    memory: () => new Promise((resolve) => (child.once('message', (usage) => resolve(usage as NodeJS.MemoryUsage)), child.send('memory'))),
    stop: () => new Promise((resolve) => (child.once('exit', () => resolve()), child.kill('SIGTERM'))),
  };
}

/** POSTs `body` as JSON through `agent`; resolves with the answer's text once it has all arrived. */
export function postJSON(agent: Agent, port: number, path: string, body: unknown): Promise<string> {
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          // A failed request would make every figure after it a lie: stop the run.
          if (res.statusCode !== 200 || text.includes('"error"')) reject(new Error(`POST ${path} failed: ${res.statusCode} ${text.slice(0, 300)}`));
          else resolve(text);
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** What a poke stream tells its owner. */
export interface PokeHandlers {
  onPoke(): void;
  /** The stream failed or closed before {@link PokeStream.close}. */
  onLost(error: Error): void;
}

/** An open poke stream. */
export interface PokeStream {
  close(): void;
}

/**
 * Opens `GET path` as a poke stream on a socket of its own (a browser's EventSource holds one
 * connection per stream) and resolves once the opening comment has arrived, which the server
 * sends only when no later change can be missed.
 */
export function openPokeStream(port: number, path: string, handlers: PokeHandlers): Promise<PokeStream> {
  return new Promise((resolve, reject) => {
    let closing = false;
    let opened = false;
    const lost = (error: Error) => (opened ? !closing && handlers.onLost(error) : reject(error));
    const req: ClientRequest = request({ host: '127.0.0.1', port, path, agent: false, headers: { accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return lost(new Error(`GET ${path} answered ${res.statusCode}`));
      res.setEncoding('utf8');
      let text = '';
      res.on('data', (chunk: string) => {
        text += chunk;
        // An event ends with a blank line; one chunk may hold several events, or part of one.
        for (let end = text.indexOf('\n\n'); end >= 0; end = text.indexOf('\n\n')) {
          const event = text.slice(0, end);
          text = text.slice(end + 2);
          if (event === 'data: poke') handlers.onPoke();
          else if (!opened && event.startsWith('retry:')) {
            opened = true;
            resolve({ close: () => ((closing = true), req.destroy()) });
          }
        }
      });
      res.on('close', () => lost(new Error(`the poke stream ${path} closed`)));
    });
    req.on('error', lost);
    req.end();
  });
}
