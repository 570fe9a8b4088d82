import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import type { SyncContext } from '../context/context.js';
import { requestReply } from '../server/handle-request.js';
import { print } from './output.js';
import { UsageError } from './usage.js';

/**
 * `viewsync inspect --web`: the inspector over a store, served on 127.0.0.1 (only this machine
 * reaches it) until Ctrl-C. Its secret is made for the run and printed, unless
 * VIEWSYNC_INSPECTOR_SECRET gives one. It shows what the store holds; the live numbers are this
 * process's, which serves no pulls or pushes, and "view as a user" needs the app's view, which the
 * CLI does not have (the app's own server shows both).
 */
export async function webCommand(ctxFor: (secret: string) => SyncContext, port: string | undefined, signal?: AbortSignal): Promise<number> {
  const number = port === undefined ? DEFAULT_PORT : Number(port);
  if (!(Number.isInteger(number) && number >= 0 && number <= 65_535))
    throw new UsageError(`--port takes a port number from 0 to 65535 (0: any free one), got ${JSON.stringify(port)}`);
  const given = process.env.VIEWSYNC_INSPECTOR_SECRET;
  if (given !== undefined && given.length < 32)
    throw new UsageError('VIEWSYNC_INSPECTOR_SECRET must be 32 characters or more (or unset, for a secret made for this run)');
  const secret = given ?? randomBytes(24).toString('base64url');
  const ctx = ctxFor(secret);
  const server = createServer((req, res) => void serve(ctx, req, res, number));
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new UsageError(`Port ${number} is in use: give another with --port (0: any free one)`) : error),
    );
    server.listen(number, '127.0.0.1', resolve);
  });
  const { port: listening } = server.address() as AddressInfo;
  print(
    `The inspector is at http://127.0.0.1:${listening}/_inspect/${given === undefined ? `\nLog in with this secret (made for this run): ${secret}` : '\nLog in with VIEWSYNC_INSPECTOR_SECRET.'}\nCtrl-C stops it.`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop).once('SIGTERM', stop);
    signal?.addEventListener('abort', stop);
  });
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  return 0;
}

/** The port it opens on unless told. */
const DEFAULT_PORT = 4848;

/** One request through the context's handler: the Node adapter's job, done plainly (the CLI may not import adapters). */
async function serve(ctx: SyncContext, req: IncomingMessage, res: ServerResponse, port: number): Promise<void> {
  try {
    const method = req.method ?? 'GET';
    const body = method === 'GET' || method === 'HEAD' ? undefined : (Readable.toWeb(req) as ReadableStream<Uint8Array>);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
    const request = new Request(`http://${req.headers.host ?? `127.0.0.1:${port}`}${req.url ?? '/'}`, {
      method,
      headers,
      ...(body && { body, duplex: 'half' }),
    } as RequestInit);
    const reply = await requestReply(request, ctx);
    res.writeHead(reply.status, reply.headers);
    if (reply.body === null) res.end();
    else if (typeof reply.body === 'string') res.end(reply.body);
    else Readable.fromWeb(reply.body as never).pipe(res);
  } catch (error) {
    res.writeHead(500, { 'content-type': 'text/plain' }).end(`The inspector failed: ${(error as Error).message}`);
  }
}
