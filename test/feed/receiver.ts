/**
 * A real HTTP receiver of webhooks for tests: a node:http server that answers as told (2xx, 500,
 * a redirect, or never) and keeps every request it got, with its body and headers.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterEach } from 'vitest';
import type { AddressInfo } from 'node:net';
import { verifyWebhook, type WebhookDelivery } from '../../src/backend.js';

export type Answer = 'ok' | 'fail' | 'stall' | 'redirect';

export interface Received {
  id: string;
  body: string;
  delivery: WebhookDelivery;
  signature: string;
  answered: Answer;
}

export interface Receiver {
  url: string;
  /** How the next requests are answered. */
  answer: Answer;
  /** Every request, in the order they came. */
  readonly received: Received[];
  /** The requests answered 2xx. */
  delivered(): Received[];
  /** Verifies each request's signature under `secret`; rejects at the first bad one. */
  verifyAll(secret: string): Promise<void>;
  /** Requests stalled now: taken, not answered, their connections open. */
  stalled(): number;
  /** Ends the requests left stalled (their connections close, as in a receiver's restart); the server goes on. */
  release(): void;
  /** Ends the requests left stalled (their connections close) and the server. */
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const stalled: ServerResponse[] = [];
  const receiver: Receiver = {
    url: '',
    answer: 'ok',
    received: [],
    delivered: () => receiver.received.filter(({ answered }) => answered === 'ok'),
    async verifyAll(secret) {
      for (const { body, signature } of receiver.received) await verifyWebhook(body, signature, secret);
    },
    stalled: () => stalled.length,
    release() {
      for (const response of stalled.splice(0)) response.destroy();
    },
    async close() {
      receiver.release();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    let body = '';
    for await (const chunk of request) body += chunk;
    const answered = receiver.answer;
    receiver.received.push({
      id: String(request.headers['viewsync-delivery']),
      body,
      delivery: JSON.parse(body) as WebhookDelivery,
      signature: String(request.headers['viewsync-signature']),
      answered,
    });
    if (answered === 'stall') {
      stalled.push(response);
      // A request the deliverer gave up on (its timeout) is stalled no longer.
      return void response.once('close', () => {
        const at = stalled.indexOf(response);
        if (at >= 0) stalled.splice(at, 1);
      });
    }
    if (answered === 'redirect') return void response.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end();
    response.writeHead(answered === 'ok' ? 204 : 500).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return receiver;
}

/** A test file's receivers and clean-up: `cleanup` steps run after each test, newest first; each receiver is closed by one. */
export function receiversOfTests(): { cleanup: Array<() => unknown>; receiver: () => Promise<Receiver> } {
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });
  const receiver = async () => {
    const started = await startReceiver();
    cleanup.push(() => started.close());
    return started;
  };
  return { cleanup, receiver };
}
