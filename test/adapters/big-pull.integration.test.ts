/**
 * A full pull of a big space through the Node server, read from the store as it is sent
 * (src/sync/version/reset-pages.ts): a client that hangs up stops the reads, one that stalls holds
 * up no more reads than the page in hand, and the server goes on answering.
 */
import { connect, type Socket } from 'node:net';
import { expect, it } from 'vitest';
import { createContext, memoryStorage, type Mutators, type Storage } from '../../src/index.js';
import type { StorageTransaction, TransactionOptions } from '../../src/store.js';
import { mutation, push, testMutators } from '../support/helpers.js';
import { httpRequest } from '../support/http-request.js';
import { serversStoppedAfterEach } from './servers.js';

const { start } = serversStoppedAfterEach();
// Far more than the sockets' buffers hold (a few MiB on loopback): about 24 MiB of JSON.
const ENTRIES = 200_000;
const PULL = JSON.stringify({ pullVersion: 1, clientGroupID: 'g', cookie: null, profileID: 'p', schemaVersion: '' });
const mutators: Mutators = {
  ...testMutators,
  fill: async (tx, { from, count }: { from: number; count: number }) => {
    for (let i = from; i < from + count; i++) await tx.set(`item/${String(i).padStart(6, '0')}`, { title: `Item ${i} `.padEnd(100, '.') });
  },
};

/** A big space on a memory store that counts the read-only transactions begun. */
async function bigSpace() {
  const inner = memoryStorage();
  const reads = { count: 0 };
  const storage: Storage = {
    transaction<T>(fn: (tx: StorageTransaction) => Promise<T>, options: TransactionOptions) {
      if (options.readOnly) reads.count++;
      return inner.transaction(fn, options);
    },
  };
  const ctx = createContext({ storage, mutators });
  await push(ctx, 'filler', [
    mutation('filler', 1, 'fill', { from: 0, count: ENTRIES / 2 }),
    mutation('filler', 2, 'fill', { from: ENTRIES / 2, count: ENTRIES / 2 }),
  ]);
  return { ctx, reads };
}

function socketPulling(port: number, stalled: boolean): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' }, () => {
      if (stalled) socket.pause();
      socket.write(
        `POST /pull HTTP/1.1\r\nhost: x\r\naccept-encoding: identity\r\ncontent-type: application/json\r\ncontent-length: ${PULL.length}\r\n\r\n${PULL}`,
      );
      resolve(socket);
    });
  });
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

it('a client that hangs up mid-pull stops the reads; the whole pull needs many more', async () => {
  const { ctx, reads } = await bigSpace();
  const server = await start(ctx, { compression: false });
  const whole = reads.count;
  const { body } = await httpRequest(new URL('/pull', server.url), 'POST', PULL, 'identity');
  expect(JSON.parse(body.toString()).patch).toHaveLength(ENTRIES + 1);
  const needed = reads.count - whole;
  expect(needed).toBeGreaterThan(6);

  const socket = await socketPulling(server.port, false);
  await new Promise((resolve) => socket.once('data', resolve));
  socket.destroy();
  await settle();
  const after = reads.count;
  await settle();
  expect(reads.count).toBe(after);
  expect(after - whole - needed).toBeLessThan(needed / 3);
}, 60_000);

it('a client that stops reading holds up the reads once the sockets are full', async () => {
  const { ctx, reads } = await bigSpace();
  const server = await start(ctx, { compression: false });
  const whole = reads.count;
  await httpRequest(new URL('/pull', server.url), 'POST', PULL, 'identity');
  const needed = reads.count - whole;
  const before = reads.count;
  const socket = await socketPulling(server.port, true);
  try {
    await settle();
    const held = reads.count - before;
    await settle();
    expect(reads.count - before).toBe(held);
    // What the sockets' buffers take, not the whole space.
    expect(held).toBeLessThan(needed / 3);
    // And the server answers others meanwhile.
    const { status } = await httpRequest(new URL('/pull', server.url), 'POST', PULL, 'identity');
    expect(status).toBe(200);
  } finally {
    socket.destroy();
  }
}, 60_000);
