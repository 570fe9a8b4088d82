import { connect, type Socket } from 'node:net';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { type Started, startCommand } from '../support/command.js';

// One account opening poke streams by the thousand and never reading them, against a real
// server process whose descriptors and memory are read from /proc: the red team's attack.

const root = fileURLToPath(new URL('../..', import.meta.url));
const started: Started[] = [];
const sockets: Socket[] = [];
afterAll(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(started.splice(0).map((server) => server.stop()));
});

/** The server, under a file-descriptor limit of `descriptors`. */
async function startServer(descriptors: number): Promise<{ url: URL; pid: number }> {
  const server = await startCommand(
    'bash',
    ['-c', `ulimit -n ${descriptors} && exec "${process.execPath}" --expose-gc --import tsx test/poke/flood-server.ts`],
    {
      cwd: root,
      ready: /\{"url":"([^"]+)","pid":(\d+)\}/,
    },
  );
  started.push(server);
  return { url: new URL(server.match[1]!), pid: Number(server.match[2]) };
}

/** Descriptors the process holds. */
const descriptors = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

/** Bytes the server's heap holds after a full collection. */
async function heap(url: URL): Promise<number> {
  return Number(await (await fetch(new URL('heap', url))).text());
}

/** `count` poke requests of `user` over raw sockets that never read a byte of the answers. */
async function flood(url: URL, user: string, count: number): Promise<void> {
  const request = `GET /poke HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: ${user}\r\n\r\n`;
  for (let i = 0; i < count; i += 100) {
    await Promise.all(
      Array.from(
        { length: Math.min(100, count - i) },
        () =>
          new Promise<void>((resolve, reject) => {
            const socket = connect(Number(url.port), url.hostname, () => {
              socket.pause();
              socket.write(request, () => resolve());
            });
            socket.once('error', reject);
            sockets.push(socket);
          }),
      ),
    );
  }
}

/** Milliseconds until `user`'s poke stream answers 200 with its first bytes. */
async function timeStream(url: URL, user: string): Promise<{ ms: number; status: number; close: () => Promise<void> }> {
  const start = performance.now();
  const response = await fetch(new URL('poke', url), { headers: { authorization: user } });
  const reader = response.body!.getReader();
  await reader.read();
  return { ms: performance.now() - start, status: response.status, close: () => reader.cancel() };
}

async function timePull(url: URL, user: string): Promise<{ ms: number; status: number }> {
  const start = performance.now();
  const body = { pullVersion: 1, clientGroupID: `g-${user}`, cookie: null, profileID: 'p', schemaVersion: '' };
  const response = await fetch(new URL('pull', url), {
    method: 'POST',
    headers: { authorization: user, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await response.text();
  return { ms: performance.now() - start, status: response.status };
}

/** Descriptors once `test` holds of them, or after `ms`. */
async function settle(pid: number, test: (held: number) => boolean, ms = 10_000): Promise<number> {
  const deadline = Date.now() + ms;
  for (;;) {
    const now = descriptors(pid);
    if (test(now) || Date.now() > deadline) return now;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('one account flooding the poke endpoint', () => {
  test('past its cap it is refused and its refused connections closed: another user streams and pulls at once, descriptors and memory stay bounded', async () => {
    const { url, pid } = await startServer(20_000);
    // Warm: the first stream and pull load code the flood would otherwise be blamed for.
    await (await timeStream(url, 'warm')).close();
    await timePull(url, 'warm');
    const before = { descriptors: await settle(pid, (held) => held < 40), heap: await heap(url) };
    await flood(url, 'mallory', 2_000);
    const alice = await timeStream(url, 'alice');
    const pull = await timePull(url, 'alice');
    // 100 streams (maxStreamsPerUser's default) and alice's; the 1,900 refused are closed.
    const mid = { descriptors: await settle(pid, (held) => held <= before.descriptors + 110), heap: await heap(url) };
    // As much again: held streams would cost some 10 KiB of heap each; refused ones nothing.
    await flood(url, 'mallory', 2_000);
    const after = { descriptors: await settle(pid, (held) => held <= before.descriptors + 110), heap: await heap(url) };
    const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
    console.log(
      `two floods of 2,000 unread streams: descriptors ${before.descriptors} -> ${mid.descriptors} -> ${after.descriptors}, heap ${mib(before.heap)} -> ${mib(mid.heap)} -> ${mib(after.heap)}; alice's stream ${alice.ms.toFixed(0)} ms, pull ${pull.ms.toFixed(0)} ms`,
    );
    expect([alice.status, pull.status]).toEqual([200, 200]);
    // At once, not after the flood: 5 ms each here, on 2 cores under a load of 5.
    expect(alice.ms).toBeLessThan(1_000);
    expect(pull.ms).toBeLessThan(1_000);
    expect(mid.descriptors).toBeLessThanOrEqual(before.descriptors + 110);
    expect(after.descriptors).toBeLessThanOrEqual(before.descriptors + 110);
    expect(mid.heap - before.heap).toBeLessThan(5 * 2 ** 20);
    expect(after.heap - mid.heap).toBeLessThan(2 ** 20);
    await alice.close();
  }, 60_000);

  test('many accounts together cannot spend the descriptors: the default maxStreams fits the limit, and a newcomer still gets in', async () => {
    // 1,000 descriptors: the default maxStreams is 650, and 12 accounts ask for 1,200.
    const { url, pid } = await startServer(1_000);
    for (let user = 0; user < 12; user++) await flood(url, `user${user}`, 100);
    const held = await settle(pid, () => false, 1_500);
    const alice = await timeStream(url, 'alice');
    const pull = await timePull(url, 'alice');
    console.log(
      `12 accounts x 100 unread streams under ulimit -n 1000: ${held} descriptors; alice's stream ${alice.ms.toFixed(0)} ms, pull ${pull.ms.toFixed(0)} ms`,
    );
    expect(held).toBeLessThan(750);
    expect([alice.status, pull.status]).toEqual([200, 200]);
    // At once: 12 ms here, on 2 cores under a load of 5.
    expect(alice.ms).toBeLessThan(1_000);
    await alice.close();
  }, 60_000);
});
