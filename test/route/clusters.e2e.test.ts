/**
 * Spaces spread over three real PostgreSQL servers (separate pg_ctl clusters), served by two
 * server instances (processes): the real `replicache` client on 30 spaces under load while five
 * spaces move between servers, one move killed -9 midway and run again; then one server's
 * PostgreSQL stopped under load and started again.
 */
import { Replicache } from 'replicache';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rendezvous } from '../../src/route/placement.js';
import { clientMutators, FetchRecorder, pendingCount, snapshot, uniqueName, waitFor } from '../interop/client.js';
import { ROOT } from '../package/packed.js';
import { EventReader } from '../poke/sse.js';
import { type Cluster, haveServers, startCluster } from '../support/clusters.js';
import { runCommand, type Started, startCommand } from '../support/command.js';
import { fastLoop } from '../support/stores.js';

const NAMES = ['a', 'b', 'c'] as const;
type Name = (typeof NAMES)[number];

if (!haveServers() || fastLoop) {
  it.skip('spaces over three PostgreSQL servers: needs PostgreSQL server binaries (scripts/start-postgres.sh installs them)', () => {});
} else {
  describe('spaces over three PostgreSQL servers, two server instances', () => {
    let clusters: Record<Name, Cluster>;
    /** Every cluster this suite started, removed (stopped, their folders deleted) after it. */
    const started: Cluster[] = [];
    const cluster = (name: string): Cluster => {
      const one = startCluster(`route-${name}`);
      started.push(one);
      return one;
    };
    let servers: Started[] = [];
    let bases: URL[] = [];
    const urls = {} as Record<Name, string>;

    beforeAll(async () => {
      // Each on a free port, new and empty: runs side by side never share one.
      clusters = { a: cluster('a'), b: cluster('b'), c: cluster('c') };
      for (const name of NAMES) urls[name] = clusters[name].url;
      const notify = process.env.DATABASE_URL ?? cluster('notify').url;
      servers = await Promise.all(
        [0, 1].map(() =>
          startCommand(process.execPath, ['--import', 'tsx', 'test/route/cluster-server.ts'], {
            cwd: ROOT,
            env: { STORES: JSON.stringify(urls), NOTIFY_URL: notify },
            ready: /\{"url":"([^"]+)"/,
          }),
        ),
      );
      bases = servers.map((server) => new URL(server.match[1]!));
    }, 120_000);

    afterAll(async () => {
      await Promise.all(servers.map((server) => server.stop()));
      for (const each of started) each.remove();
    });

    /** Runs the CLI's move of `space` to `to`, over the three servers as the instances name them. */
    const move = (space: string, to: Name) => ['move', space, '--to', to, ...NAMES.flatMap((name) => ['--store', `${name}=${urls[name]}`])];

    it('moves five of 30 spaces under load, one move killed -9 and run again: every counter exact, no reset, pokes after', async () => {
      const spaces = Array.from({ length: 30 }, (_, i) => `space-${i}`);
      const home = (space: string) => rendezvous(space, NAMES) as Name;
      const onA = spaces.filter((space) => home(space) === 'a');
      const [big, ...others] = [onA[0]!, ...spaces.filter((space) => space !== onA[0]).slice(0, 4)];
      const moves: Array<[string, Name]> = [[big, 'b'], ...others.map((space): [string, Name] => [space, NAMES[(NAMES.indexOf(home(space)) + 1) % 3]!])];

      // The big space: 30,000 entries, so that its copy takes long enough to be killed in.
      for (let n = 0; n < 3; n++) {
        const pushed = await rawPush(bases[0]!, big, 'seeder', 'seed', n + 1, 'fill', { prefix: `seed/${n}/`, count: 10_000 });
        expect(pushed.status, await pushed.text()).toBe(200);
      }

      const recorder = new FetchRecorder();
      const reps = spaces.map((space, i) => {
        const rep = new Replicache({
          name: uniqueName(`route-${i}`),
          mutators: clientMutators,
          // Pulls from one instance, pushes to the other: every change crosses processes.
          pullURL: `${new URL('pull', bases[i % 2]!).href}?space=${space}`,
          pushURL: `${new URL('push', bases[(i + 1) % 2]!).href}?space=${space}`,
          auth: '',
          pullInterval: 300,
          pushDelay: 0,
          requestOptions: { minDelayMs: 10, maxDelayMs: 200 },
          logLevel: 'error',
          kvStore: 'idb',
        });
        rep.onClientStateNotFound = () => resetsOrLosses.push(`${space}: onClientStateNotFound`);
        return rep;
      });
      const resetsOrLosses: string[] = [];
      const issued = spaces.map(() => 0);
      let loading = true;
      const load = Promise.all(
        reps.map(async (rep, i) => {
          while (loading) {
            await rep.mutate.increment({ key: 'count', delta: 1 });
            issued[i]!++;
            await sleep(80);
          }
        }),
      );

      try {
        await sleep(1_000);
        // The first move is killed once it has started copying, then run to its end.
        // Killed as soon as it says it copies: a sleep first let a fast machine's move run past its commit point (CI saw it).
        const killed = await startCommand(process.execPath, ['--import', 'tsx', 'src/cli/bin.ts', ...move(big, 'b')], { cwd: ROOT, ready: /move: copying/ });
        killed.kill('SIGKILL');
        await killed.stop();
        expect(killed.output()).not.toMatch(/moved "/);
        // A move killed past its commit point is done: run again, it finds the space there (src/route/route-record.ts).
        const committed = /move: (committed|switched|cleaning)/.test(killed.output());
        for (const [space, to] of moves) {
          const done = await runCommand(process.execPath, ['--import', 'tsx', 'src/cli/bin.ts', ...move(space, to)], { cwd: ROOT });
          const said = space === big && committed ? `"${space}" is in "${to}" already` : `moved "${space}" from "\\w" to "${to}"`;
          expect(done.output, done.output).toMatch(new RegExp(said));
          console.log(done.output.trim().split('\n').at(-1));
        }
        await sleep(1_000);
      } finally {
        loading = false;
        await load;
      }

      try {
        for (const [i, rep] of reps.entries()) {
          await waitFor(async () => (await pendingCount(rep)) === 0, { timeout: 60_000, message: () => `${spaces[i]}'s pending mutations` });
        }
        for (const [i, space] of spaces.entries()) {
          expect((await snapshot(reps[i]!)).count, space).toBe(issued[i]);
          expect((await serverData(bases[(i + 1) % 2]!, space)).count, space).toBe(issued[i]);
        }
        expect(issued.reduce((sum, n) => sum + n, 0)).toBeGreaterThan(30 * 20);
        // No client was reset: no pull with a cookie was answered from scratch.
        const resets = recorder.requests.filter(
          (request) =>
            request.url.includes('/pull') &&
            (request.body as { cookie?: unknown }).cookie != null &&
            /^\{[^[]*"patch":\[\{"op":"clear"/.test(request.responseText),
        );
        expect(resets.map((request) => request.url)).toEqual([]);
        expect(resetsOrLosses).toEqual([]);
      } finally {
        recorder.restore();
        await Promise.all(reps.map((rep) => rep.close()));
      }

      // Pokes still arrive: a stream on one instance hears of a push to the other, for each moved space.
      for (const [space] of moves) {
        const stream = await fetch(new URL(`poke?space=${space}`, bases[1]!));
        const events = new EventReader(stream.body!);
        await events.until(() => events.comments >= 1);
        expect((await rawPush(bases[0]!, space, 'poker', 'poker', 1, 'put', { key: 'poked', value: true })).status).toBe(200);
        await events.until(() => events.pokes >= 1, 5_000);
        await events.cancel();
      }
    }, 240_000);

    it("fails only a stopped server's spaces, the others answered as before, and recovers when it returns", async () => {
      const spaces = Array.from({ length: 60 }, (_, i) => `outage-${i}`);
      const onC = spaces.filter((space) => rendezvous(space, NAMES) === 'c').slice(0, 3);
      const elsewhere = spaces.filter((space) => rendezvous(space, NAMES) !== 'c').slice(0, 6);
      const pushers = [...onC, ...elsewhere].map((space) => ({
        space,
        next: 1,
        acknowledged: 0,
        statuses: new Map<number, number>(),
        latencies: { before: [] as number[], during: [] as number[], after: [] as number[] },
      }));
      let phase: 'before' | 'during' | 'after' = 'before';
      let running = true;
      const load = Promise.all(
        pushers.map(async (pusher, i) => {
          while (running) {
            const started = performance.now();
            // The same mutation until it is acknowledged: a refused one was not applied.
            const response = await rawPush(bases[i % 2]!, pusher.space, 'g', 'c', pusher.next, 'increment', { key: 'count', delta: 1 }).catch(() => undefined);
            const ms = performance.now() - started;
            const status = response?.status ?? 0;
            await response?.arrayBuffer().catch(() => {});
            pusher.statuses.set(status, (pusher.statuses.get(status) ?? 0) + 1);
            if (status === 200) {
              pusher.next++;
              pusher.acknowledged++;
              pusher.latencies[phase].push(ms);
            } else {
              pusher.latencies[phase].push(ms);
              await sleep(50);
            }
            await sleep(20);
          }
        }),
      );
      const c = pushers.slice(0, onC.length);
      const others = pushers.slice(onC.length);
      try {
        await sleep(3_000);
        phase = 'during';
        clusters.c.stop();
        const stoppedAt = Date.now();
        await sleep(4_000);
        // Every push to c's spaces was answered, and not with a 500 nor a hang: the slowest took
        // 0.25 to 0.7 s here (2 cores under a load of 4 to 7; connect_timeout is 2 s).
        for (const pusher of c) {
          expect(
            [...pusher.statuses.keys()].filter((status) => status !== 200 && status !== 503),
            pusher.space,
          ).toEqual([]);
          expect(pusher.statuses.get(503) ?? 0, pusher.space).toBeGreaterThan(0);
          expect(Math.max(...pusher.latencies.during), pusher.space).toBeLessThan(10_000);
        }
        clusters.c.start();
        const restartedAt = Date.now();
        phase = 'after';
        const acknowledged = c.map((pusher) => pusher.acknowledged);
        await waitFor(() => c.every((pusher, i) => pusher.acknowledged > acknowledged[i]!), { timeout: 30_000, message: "c's spaces taking pushes again" });
        const recovered = Date.now() - restartedAt;
        console.log(`c stopped for ${restartedAt - stoppedAt} ms; its spaces took pushes again ${recovered} ms after it was back`);
        // The client's reconnect backoff is bounded to 1 s (cluster-server.ts); the pushers wait 70 ms
        // after a 503. 0.24 to 0.73 s here (two runs at once on 2 cores, other work on them too);
        // postgres.js's own backoff took 12.5 s, which this catches.
        expect(recovered).toBeLessThan(8_000);
        await waitFor(() => c.every((pusher, i) => pusher.acknowledged > acknowledged[i]! + 3), { timeout: 30_000, message: "c's spaces taking pushes again" });
      } finally {
        running = false;
        await load;
      }
      const p95 = (list: number[]) => [...list].sort((x, y) => x - y)[Math.floor(list.length * 0.95)]!;
      const before = p95(others.flatMap((pusher) => pusher.latencies.before));
      const during = p95(others.flatMap((pusher) => pusher.latencies.during));
      // What a server down costs the others' latency is measured by `npm run bench:route` (its
      // outage section), not bounded here: on a busy machine the p95s say more of it than of c.
      console.log(
        `other servers' spaces, push p95: ${before.toFixed(1)} ms before, ${during.toFixed(1)} ms while c was down (${others.reduce((sum, pusher) => sum + pusher.latencies.during.length, 0)} pushes)`,
      );
      for (const pusher of others) expect([...pusher.statuses.keys()], pusher.space).toEqual([200]);
      for (const pusher of pushers) expect((await serverData(bases[0]!, pusher.space)).count, pusher.space).toBe(pusher.acknowledged);
    }, 120_000);
  });
}

function rawPush(base: URL, space: string, group: string, client: string, id: number, name: string, args: unknown): Promise<Response> {
  return fetch(`${new URL('push', base).href}?space=${space}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      pushVersion: 1,
      clientGroupID: group,
      mutations: [{ clientID: client, id, name, args, timestamp: Date.now() }],
      profileID: 'p',
      schemaVersion: '',
    }),
  });
}

/** What the server holds in `space`, read by a full pull of a client group of its own. */
async function serverData(base: URL, space: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${new URL('pull', base).href}?space=${space}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ pullVersion: 1, clientGroupID: uniqueName('observer'), cookie: null, profileID: 'p', schemaVersion: '' }),
  });
  const body = (await response.json()) as { patch: Array<{ op: string; key: string; value: unknown }> };
  return Object.fromEntries(body.patch.filter((op) => op.op === 'put').map((op) => [op.key, op.value]));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
