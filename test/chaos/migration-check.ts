/**
 * Data migrations among a chaos run's faults: the clients' spaces get entries `item/<n>` at the
 * start, and the migrations of migrations.mjs run over them one after another while clients push
 * and pull, from the CLI (killed -9 at random times, or with the servers stopped on SQLite) or
 * from a server (killed by the faults). Once every fault is healed, each migration begun is run
 * to its end, and the checker asks that every entry of every space show each of them exactly
 * once (a field per migration counts its runs), and that no entry was lost.
 */
import { spawn } from 'node:child_process';
import type { JSONValue } from '../../src/index.js';
import type { Anomaly } from './checker.js';
import type { ClientEnvironment } from './raw-client.js';
import type { Random } from './rng.js';
import type { Deployment } from './topologies.js';
import { bundled, ROOT } from './processes.js';
import { retry, sleep } from './retry.js';

/** Entries `item/<n>` seeded into each space. */
export const ITEMS = 100;
const MODULE = 'test/chaos/migrations.mjs';

/** Which migrations each space has begun, in order: the last one may be unfinished. */
export type MigrationsBegun = Map<string, string[]>;

type Control = (env: ClientEnvironment, name: string, query: string, body?: string) => Promise<Response>;
type Recorder = (kind: string, detail: string, window?: { from?: number }) => void;

/** Seeds the items, then runs migrations in `spaces` until `going` says stop; resolves with what each space began. */
export async function migrationLoop(
  env: ClientEnvironment,
  deployment: Deployment,
  spaces: readonly string[],
  control: Control,
  rng: Random,
  going: () => boolean,
  record: Recorder,
  begun: MigrationsBegun,
): Promise<void> {
  for (const space of spaces) await retry(() => control(env, 'seed-items', `space=${encodeURIComponent(space)}&count=${ITEMS}`));
  const next = new Map(spaces.map((space) => [space, 1]));
  while (going()) {
    await sleep(rng.int(300, 2_000));
    if (!going()) return;
    const space = rng.pick(spaces);
    const name = `chaos-${next.get(space)!}`;
    const list = begun.get(space) ?? [];
    if (list.at(-1) !== name) list.push(name);
    begun.set(space, list);
    const from = performance.now();
    const cli = deployment.cli !== undefined && rng.chance(deployment.cli.exclusive ? 1 / 4 : 1 / 2) ? deployment.cli : undefined;
    let outcome: string;
    if (cli !== undefined) {
      // Killed -9 at a random time in half the runs: midway, or before it began or after it ended.
      const killMs = rng.chance(0.5) ? rng.int(50, 2_500) : undefined;
      const run = () => cliMigrate(cli.args, space, name, killMs);
      outcome = cli.exclusive ? await deployment.withServersStopped(run) : await run();
    } else {
      const response = await control(env, 'migrate', `space=${encodeURIComponent(space)}&name=${name}&batch=10`).catch(() => undefined);
      outcome = response === undefined ? 'network' : response.status === 200 ? 'done' : `status ${response.status}`;
    }
    if (outcome === 'done') next.set(space, next.get(space)! + 1);
    record(
      `migrate${cli === undefined ? ' on a server' : cli.exclusive ? ' with the CLI, the servers stopped' : ' with the CLI'}`,
      `${space} ${name}: ${outcome}`,
      { from },
    );
  }
}

/** Runs every migration begun to its end, on a server, as an operator would after the faults; a failure is returned as an anomaly. */
export async function finishMigrations(env: ClientEnvironment, control: Control, begun: MigrationsBegun): Promise<Anomaly[]> {
  const anomalies: Anomaly[] = [];
  for (const [space, names] of begun) {
    for (const name of names) {
      try {
        await retry(() => control(env, 'migrate', `space=${encodeURIComponent(space)}&name=${name}&batch=10`), 40);
      } catch (error) {
        anomalies.push({ kind: 'migration', detail: `${space}: migration ${name} could not be finished once the faults were healed: ${String(error)}` });
      }
    }
  }
  return anomalies;
}

/** Every item of each space there, each migration begun in it applied to each exactly once. */
export function judgeMigrations(truth: ReadonlyMap<string, ReadonlyMap<string, JSONValue>>, begun: MigrationsBegun): Anomaly[] {
  const anomalies: Anomaly[] = [];
  for (const [space, names] of begun) {
    const data = truth.get(space);
    if (data === undefined) continue;
    for (let n = 0; n < ITEMS; n++) {
      const key = `item/${String(n).padStart(4, '0')}`;
      const value = data.get(key) as Record<string, number> | undefined;
      if (value === undefined || value.n !== n) {
        anomalies.push({ kind: 'migration', detail: `${space}: ${key} is ${JSON.stringify(value)}, not an item numbered ${n}` });
        continue;
      }
      const wrong = names.filter((name) => value[name] !== 1);
      if (wrong.length > 0)
        anomalies.push({
          kind: 'migration',
          detail: `${space}: ${key} shows ${wrong.map((name) => `${name} ${value[name] ?? 0} times`).join(', ')} (each once is right): ${JSON.stringify(value)}`,
        });
    }
  }
  return anomalies;
}

/** `viewsync migrate NAME --module … --space SPACE`, killed after `killMs` when given: `done`, `killed`, or `exit N: <last line>`. */
async function cliMigrate(storeArgs: string[], space: string, name: string, killMs: number | undefined): Promise<string> {
  const child = spawn(
    process.execPath,
    [await bundled('src/cli/bin.ts'), 'migrate', name, '--module', MODULE, '--space', space, '--batch', '10', '--quiet', ...storeArgs],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  // Only a hang otherwise: a migration of a hundred entries takes a second or two, under faults a few more.
  const timer = setTimeout(() => child.kill('SIGKILL'), killMs ?? 120_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (status) => resolve(status)));
  clearTimeout(timer);
  if (code === 0) return 'done';
  if (code === null) return killMs === undefined ? 'hung, killed' : `killed after ${killMs} ms`;
  return `exit ${code}: ${stderr.trim().split('\n').at(-1)?.slice(0, 200) ?? ''}`;
}
