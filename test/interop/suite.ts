/**
 * Interop suite: the real `replicache` client (15.x, in Node over fake-indexeddb) syncing with a
 * running server through its HTTP endpoints. Every runtime adapter can run it: pass a `start`
 * that serves `runtimeMutators` (`test/runtime/app.ts`) on a fresh store each call.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Clients, FetchRecorder, clientMutators, pendingCount, serverData, snapshot, uniqueName, waitFor, type Rep } from './client.js';
import type { MutatorDefs, WriteTransaction } from 'replicache';
import { connectPokes } from '../../src/client/index.js';

export interface RunningServer {
  /** Base URL; the client calls `<url>pull` and `<url>push`. */
  url: URL;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Listen on this port (to restart a server where its clients expect it). Default: any free one. */
  port?: number;
  /**
   * Serve a context whose `authenticate` accepts only requests whose `Authorization` header is
   * exactly this string (anything else: 401).
   */
  requireAuth?: string;
}

/** Starts a server on a FRESH, empty store every call. */
export type StartServer = (options?: StartOptions) => Promise<RunningServer>;

export interface InteropOptions {
  /** Whether `start` honours {@link StartOptions.requireAuth}; when false the auth test is skipped. Default: true. */
  requireAuth?: boolean;
}

export function describeInterop(name: string, start: StartServer, options: InteropOptions = {}): void {
  describe(`interop with the replicache client: ${name}`, () => {
    let server: RunningServer;
    const extraServers: RunningServer[] = [];
    const clients = new Clients(() => server.url);
    let recorder: FetchRecorder | undefined;

    beforeAll(async () => {
      server = await start();
    }, 120_000);
    afterAll(() => server?.stop());
    afterEach(async () => {
      await clients.closeAll();
      recorder?.restore();
      recorder = undefined;
      await Promise.all(extraServers.splice(0).map((s) => s.stop()));
    });

    /** Waits until every instance has no pending mutation. */
    const drained = (reps: Rep<MutatorDefs>[], timeout = 10_000) =>
      waitFor(async () => (await Promise.all(reps.map(pendingCount))).every((n) => n === 0), {
        timeout,
        message: 'pending mutations to drain to zero on every instance',
      });

    /** Waits until every instance holds exactly `expected` under `prefix`. */
    const converged = (reps: Rep<MutatorDefs>[], prefix: string, expected: Record<string, unknown>, timeout = 10_000) => {
      let last: unknown;
      return waitFor(
        async () => {
          last = await Promise.all(reps.map((rep) => snapshot(rep, prefix)));
          return (last as Record<string, unknown>[]).every((data) => JSON.stringify(sortKeys(data)) === JSON.stringify(sortKeys(expected)));
        },
        { timeout, message: () => `every instance to hold ${JSON.stringify(expected)}; they hold ${JSON.stringify(last)}` },
      );
    };

    /** No instance logged an error (the client logs, rather than throws, on a bad response). */
    const noClientErrors = (reps: Rep<MutatorDefs>[]) => {
      for (const rep of reps) expect(rep.logs.filter((entry) => entry.level === 'error')).toEqual([]);
    };

    it('put, del and increment reach the server and come back', async () => {
      const p = uniqueName('ops') + '/';
      const rep = clients.open({ name: uniqueName('ops') });
      await rep.mutate.put({ key: `${p}a`, value: { text: 'ü🙂', list: [1, null, true] } });
      await rep.mutate.put({ key: `${p}b`, value: 'gone soon' });
      await rep.mutate.increment({ key: `${p}n`, delta: 2 });
      await rep.mutate.increment({ key: `${p}n`, delta: 3 });
      await rep.mutate.del({ key: `${p}b` });
      await drained([rep]);
      const expected = { [`${p}a`]: { text: 'ü🙂', list: [1, null, true] }, [`${p}n`]: 5 };
      expect(await serverData(server.url, p)).toEqual(expected);
      await converged([rep], p, expected);
      noClientErrors([rep]);
    });

    it('pending mutations are listed until a pull confirms them, then drain to zero', async () => {
      const p = uniqueName('pending') + '/';
      // No background pulls: only the explicit pull below can confirm the mutations.
      const rep = clients.open({ name: uniqueName('pending'), pullInterval: null });
      await rep.pull({ now: true }); // the first pull, so that no later one runs unasked
      for (let i = 0; i < 5; i++) await rep.mutate.increment({ key: `${p}n`, delta: 1 });
      await rep.mutate.put({ key: `${p}x`, value: 1 });
      const pending = await rep.experimentalPendingMutations();
      expect(pending.map((m) => [m.name, m.id, m.clientID])).toEqual([
        ...[1, 2, 3, 4, 5].map((id) => ['increment', id, rep.clientID]),
        ['put', 6, rep.clientID],
      ]);
      // The pushes reach the server while the mutations are still pending on the client.
      await waitFor(async () => JSON.stringify(await serverData(server.url, p)) === JSON.stringify({ [`${p}n`]: 5, [`${p}x`]: 1 }), {
        message: 'the pushed mutations to be on the server',
      });
      expect(await pendingCount(rep)).toBe(6);
      await rep.pull({ now: true });
      await drained([rep], 5_000);
      expect(await snapshot(rep, p)).toEqual({ [`${p}n`]: 5, [`${p}x`]: 1 });
      noClientErrors([rep]);
    });

    it('several client groups converge on the same server data', async () => {
      const p = uniqueName('groups') + '/';
      const reps = [0, 1, 2].map((i) => clients.open({ name: uniqueName(`group${i}`) }));
      const groups = await Promise.all(reps.map((rep) => rep.clientGroupID));
      expect(new Set(groups).size).toBe(3);
      await Promise.all(
        reps.map(async (rep, i) => {
          await rep.mutate.put({ key: `${p}own/${i}`, value: { from: i } });
          await rep.mutate.put({ key: `${p}shared`, value: i });
          await rep.mutate.put({ key: `${p}doomed/${i}`, value: i });
        }),
      );
      await drained(reps);
      // Each group sees the others' writes; then one deletes a key another group wrote.
      await waitFor(async () => await reps[0]!.query((tx) => tx.has(`${p}doomed/1`)), { message: `group 0 to see group 1's ${p}doomed/1` });
      await reps[0]!.mutate.del({ key: `${p}doomed/1` });
      await drained(reps);
      const onServer = await serverData(server.url, p);
      expect(Object.keys(onServer).sort()).toEqual([...[0, 1, 2].map((i) => `${p}own/${i}`), `${p}doomed/0`, `${p}doomed/2`, `${p}shared`].sort());
      expect([0, 1, 2]).toContain(onServer[`${p}shared`]);
      await converged(reps, p, onServer);
      noClientErrors(reps);
    });

    it('with pokes and no pull interval, each write reaches the other group and is confirmed on its own', async () => {
      const p = uniqueName('pokes') + '/';
      const reps = [0, 1].map((i) => clients.open({ name: uniqueName(`poke${i}`), pullInterval: null }));
      const [writer, watcher] = reps as [Rep, Rep];
      const connections = reps.map((rep) => connectPokes(rep, new URL('poke', server.url)));
      try {
        await waitFor(() => connections.every((connection) => connection.connected), { message: 'both poke streams to open' });
        for (let i = 0; i < 5; i++) {
          await writer.mutate.put({ key: `${p}${i}`, value: i });
          await waitFor(() => watcher.query((tx) => tx.has(`${p}${i}`)), { timeout: 5_000, interval: 5, message: `the watcher to see ${p}${i}` });
        }
        // The writer learns its mutations were applied only from a pull, which only a poke starts.
        await drained([writer], 5_000);
        await converged(reps, p, Object.fromEntries([0, 1, 2, 3, 4].map((i) => [`${p}${i}`, i])));
        noClientErrors(reps);
      } finally {
        for (const connection of connections) connection.close();
      }
    });

    it('two instances of one name share a client group (tabs) and see each other’s writes', async () => {
      const p = uniqueName('tabs') + '/';
      const tabName = uniqueName('tabs');
      const a = clients.open({ name: tabName });
      const groupA = await a.clientGroupID;
      const b = clients.open({ name: tabName });
      expect(await b.clientGroupID).toBe(groupA);
      expect(b.clientID).not.toBe(a.clientID);
      await a.mutate.put({ key: `${p}from-a`, value: 'a' });
      await b.mutate.put({ key: `${p}from-b`, value: 'b' });
      await a.mutate.increment({ key: `${p}n`, delta: 1 });
      await b.mutate.increment({ key: `${p}n`, delta: 10 });
      await drained([a, b]);
      const expected = { [`${p}from-a`]: 'a', [`${p}from-b`]: 'b', [`${p}n`]: 11 };
      expect(await serverData(server.url, p)).toEqual(expected);
      await converged([a, b], p, expected);
      noClientErrors([a, b]);
    });

    it('concurrent increments from several groups and tabs sum exactly on every client and the server', async () => {
      const p = uniqueName('sum') + '/';
      const shared = uniqueName('sum-tab');
      const reps = [
        clients.open({ name: shared }),
        clients.open({ name: shared }),
        clients.open({ name: uniqueName('sum-g2') }),
        clients.open({ name: uniqueName('sum-g3') }),
      ];
      let expected = 0;
      const perClient = 15;
      await Promise.all(
        reps.map(async (rep, i) => {
          for (let k = 0; k < perClient; k++) {
            const delta = (i + 1) * 100 + k;
            expected += delta;
            await rep.mutate.increment({ key: `${p}counter`, delta });
          }
        }),
      );
      await drained(reps, 15_000);
      expect(await serverData(server.url, p)).toEqual({ [`${p}counter`]: expected });
      await converged(reps, p, { [`${p}counter`]: expected }, 15_000);
      noClientErrors(reps);
    });

    it('a mutation the server does not know does not block the ones after it', async () => {
      const p = uniqueName('unknown') + '/';
      const mutators = {
        ...clientMutators,
        clientOnly: async (tx: WriteTransaction, { key }: { key: string }) => {
          await tx.set(key, 'only on the client');
        },
      };
      const rep = clients.open({ name: uniqueName('unknown'), mutators });
      await rep.mutate.put({ key: `${p}before`, value: 1 });
      await rep.mutate.clientOnly({ key: `${p}local` });
      await rep.mutate.put({ key: `${p}after`, value: 2 });
      await rep.mutate.increment({ key: `${p}n`, delta: 7 });
      expect(await snapshot(rep, p)).toMatchObject({ [`${p}local`]: 'only on the client' });
      await drained([rep]);
      const expected = { [`${p}after`]: 2, [`${p}before`]: 1, [`${p}n`]: 7 };
      expect(await serverData(server.url, p)).toEqual(expected);
      // The server skipped it, so once confirmed its speculative write is gone from the client too.
      await converged([rep], p, expected);
      noClientErrors([rep]);
    });

    it('a new client gets everything in its first pull', async () => {
      const p = uniqueName('fresh') + '/';
      const writer = clients.open({ name: uniqueName('writer') });
      for (let i = 0; i < 20; i++) await writer.mutate.put({ key: `${p}k${String(i).padStart(2, '0')}`, value: { i } });
      await writer.mutate.del({ key: `${p}k07` });
      await writer.mutate.increment({ key: `${p}n`, delta: 3 });
      await drained([writer]);
      const onServer = await serverData(server.url, p);
      expect(Object.keys(onServer)).toHaveLength(20);

      recorder = new FetchRecorder();
      // No background pulls: it pulls once when it opens, and that pull must bring everything.
      const fresh = clients.open({ name: uniqueName('fresh'), pullInterval: null });
      await converged([fresh], p, onServer);
      const group = await fresh.clientGroupID;
      // Only its own group's pulls (mutation recovery may pull for other groups of the profile).
      const pulls = recorder.from(fresh.clientID).filter((r) => r.url.endsWith('/pull') && (r.body as { clientGroupID?: string }).clientGroupID === group);
      expect(pulls).toHaveLength(1);
      expect(pulls[0]).toMatchObject({ status: 200, body: { pullVersion: 1, cookie: null, clientGroupID: group } });
      noClientErrors([writer, fresh]);
    });

    it.skipIf(options.requireAuth === false)('sends the Authorization header to authenticate, and re-authenticates with getAuth after a 401', async () => {
      const own = await start({ requireAuth: 'Bearer t' });
      extraServers.push(own);
      const authClients = new Clients(() => own.url);
      try {
        recorder = new FetchRecorder();
        const p = uniqueName('auth') + '/';
        const good = authClients.open({ name: uniqueName('auth-good'), auth: 'Bearer t' });
        await good.mutate.put({ key: `${p}good`, value: 1 });
        await drained([good]);
        expect(await snapshot(good, p)).toEqual({ [`${p}good`]: 1 });
        // Answered ones: a periodic pull may be in flight as this runs.
        for (const request of recorder.from(good.clientID).filter(({ status }) => status !== 'pending'))
          expect([request.authorization, request.status]).toEqual(['Bearer t', 200]);

        // A stale token is refused with 401, and the client then asks getAuth for a new one.
        let getAuthCalls = 0;
        const stale = authClients.open({
          name: uniqueName('auth-stale'),
          auth: 'Bearer stale',
          getAuth: () => (getAuthCalls++, 'Bearer t'),
        });
        await stale.mutate.put({ key: `${p}stale`, value: 2 });
        await drained([stale]);
        expect(getAuthCalls).toBeGreaterThan(0);
        const seen = recorder.from(stale.clientID).map((r) => [r.authorization, r.status]);
        expect(seen).toContainEqual(['Bearer stale', 401]);
        expect(seen).toContainEqual(['Bearer t', 200]);
        await converged([good, stale], p, { [`${p}good`]: 1, [`${p}stale`]: 2 });

        // Without the token the server refuses: the observer's anonymous pull is a 401.
        await expect(serverData(own.url)).rejects.toThrow(/401/);
      } finally {
        await authClients.closeAll();
      }
    });

    it('a server that lost its state (restarted on a fresh store, same port) does not wedge an old client', async () => {
      const first = await start();
      let current = first;
      const restartClients = new Clients(() => current.url);
      try {
        recorder = new FetchRecorder();
        const p = uniqueName('lost') + '/';
        let notFoundAt: number | undefined;
        const old = restartClients.open({ name: uniqueName('lost-old'), onClientStateNotFound: () => (notFoundAt ??= Date.now()) });
        await old.mutate.put({ key: `${p}before`, value: 1 });
        await old.mutate.increment({ key: `${p}n`, delta: 4 });
        await drained([old]);
        await converged([old], p, { [`${p}before`]: 1, [`${p}n`]: 4 });

        await first.stop();
        const second = await start({ port: Number(first.url.port) });
        current = second;
        extraServers.push(second);
        expect(second.url.href, 'the restarted server must listen where the client expects it').toBe(first.url.href);
        const restartedAt = Date.now();
        await old.mutate.put({ key: `${p}after-restart`, value: 2 });

        await waitFor(() => notFoundAt !== undefined, {
          timeout: 10_000,
          message: () =>
            `onClientStateNotFound on the old client; its requests since the restart: ${JSON.stringify(
              recorder!
                .from(old.clientID)
                .filter((r) => r.at >= restartedAt)
                .slice(-6)
                .map((r) => [r.url.slice(-4), r.status, r.responseText.slice(0, 200)]),
            )}`,
        });
        // It gave up: no more requests from it (allowing for one already under way).
        await new Promise((resolve) => setTimeout(resolve, 600));
        const later = recorder.from(old.clientID).filter((r) => r.at > notFoundAt! + 100);
        expect(later.map((r) => r.url)).toEqual([]);

        // A new instance syncs with the new server, which has none of the lost data.
        const p2 = uniqueName('lost-new') + '/';
        const fresh = restartClients.open({ name: uniqueName('lost-new') });
        await fresh.mutate.put({ key: `${p2}x`, value: 'new' });
        await fresh.mutate.increment({ key: `${p2}n`, delta: 1 });
        await drained([fresh]);
        expect(await serverData(second.url, p2)).toEqual({ [`${p2}n`]: 1, [`${p2}x`]: 'new' });
        expect(await serverData(second.url, p)).toEqual({});
        await converged([fresh], p2, { [`${p2}n`]: 1, [`${p2}x`]: 'new' });
        noClientErrors([fresh]);
      } finally {
        await restartClients.closeAll();
      }
    });

    // The default onClientStateNotFound reloads the page, and the reloaded page opens the SAME
    // name. Once the old instance has persisted (about a second idle in any real tab), the new
    // instance forks a new client group from the disabled group's snapshot, old cookie included,
    // so its first pull carries a cookie of the lost store. Answering ClientStateNotFound again
    // would reload the page forever; the server must send a reset the client accepts.
    it('an instance reopened under the same name after the loss (the default reload) syncs with the new server', async () => {
      const first = await start();
      let current = first;
      const restartClients = new Clients(() => current.url);
      try {
        recorder = new FetchRecorder();
        const name = uniqueName('reload');
        let notFound = 0;
        const old = restartClients.open({ name, onClientStateNotFound: () => notFound++ });
        await old.mutate.increment({ key: 'reload/n', delta: 1 });
        await drained([old]);
        // Wait until the synced snapshot is persisted (the client persists after about 1 s idle;
        // a probe resets that timer, so probe seldom): a probe of the same name with other
        // mutators forks from the newest snapshot, so its first pull shows the persisted cookie.
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        await waitFor(
          async () => {
            const probe = restartClients.open({ name, mutators: { ...clientMutators, probe: async () => {} }, pullInterval: null });
            try {
              const group = await probe.clientGroupID;
              let first: { cookie?: unknown } | undefined;
              await waitFor(
                () =>
                  (first = recorder!.from(probe.clientID).find((r) => r.url.endsWith('/pull') && (r.body as { clientGroupID?: string }).clientGroupID === group)
                    ?.body as never) !== undefined,
                {
                  timeout: 2_000,
                  message: 'the probe’s first pull',
                },
              );
              return first!.cookie !== null;
            } finally {
              await probe.close();
            }
          },
          { timeout: 6_000, interval: 1_500, message: 'the old instance to persist its synced snapshot' },
        );

        await first.stop();
        const second = await start({ port: Number(first.url.port) });
        current = second;
        extraServers.push(second);
        expect(second.url.href).toBe(first.url.href);
        // The old instance's pulls now get a reset it accepts, so it keeps reading; its next
        // write (id 2, from a client the new store never saw) proves the loss and ends the group.
        await old.mutate.increment({ key: 'reload/n', delta: 1 });
        await waitFor(() => notFound > 0, { message: 'onClientStateNotFound on the old instance' });
        await old.close();

        // What the default handler's reload does: a new instance of the same name.
        let reloadedNotFound = 0;
        const reloaded = restartClients.open({ name, onClientStateNotFound: () => reloadedNotFound++ });
        await reloaded.mutate.put({ key: 'reload/x', value: 1 });
        const group = await reloaded.clientGroupID;
        await waitFor(
          () =>
            recorder!
              .from(reloaded.clientID)
              .some((r) => r.url.endsWith('/pull') && (r.body as { clientGroupID?: string }).clientGroupID === group && r.status === 200),
          {
            message: 'the reloaded instance’s first pull',
          },
        );
        await new Promise((resolve) => setTimeout(resolve, 200));
        const firstPull = recorder
          .from(reloaded.clientID)
          .find((r) => r.url.endsWith('/pull') && (r.body as { clientGroupID?: string }).clientGroupID === group)!;
        expect(reloadedNotFound, `first pull ${JSON.stringify(firstPull.body)} was answered ${firstPull.responseText}`).toBe(0);
        await drained([reloaded], 3_000);
      } finally {
        await restartClients.closeAll();
      }
    });
  });
}

function sortKeys(data: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(data).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
