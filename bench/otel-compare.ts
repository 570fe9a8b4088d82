/**
 * What OpenTelemetry costs on push and pull: bench/run.ts (quick: up to 100k entries) on a base
 * checkout (the build before telemetry) and on this one (or TREE) without an SDK, under the Node
 * SDK (VIEWSYNC_BENCH_OTEL=1) and under it without its async context manager (=nocontext), run in
 * turn, `ROUNDS` times, in a rotating order so that no variant always runs first or on a warmer
 * machine. Each figure is the median of its rounds.
 *
 * Every checkout runs this tree's bench files against its own src/, so the instrument is the
 * same and only the library differs:
 *
 *   git worktree add /tmp/base 0a15cf5 && ln -s "$PWD/node_modules" /tmp/base/node_modules
 *   node --import tsx bench/otel-compare.ts /tmp/base 4 [TREE]
 *
 * Takes about 35 s a run (16 runs for 4 rounds). Not part of `npm test`.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Row } from './table.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = resolve(here, '..');
const base = resolve(process.argv[2] ?? '/tmp/base');
const rounds = Number(process.argv[3] ?? 4);
const tree = resolve(process.argv[4] ?? root);
if (base === root || !existsSync(join(base, 'src/index.ts')) || !existsSync(join(base, 'node_modules'))) {
  throw new Error(`${base} must be another checkout of viewsync with node_modules (see this file's header)`);
}
for (const dir of new Set([base, tree].filter((dir) => dir !== root))) {
  for (const file of readdirSync(here).filter((name) => name.endsWith('.ts'))) copyFileSync(join(here, file), join(dir, 'bench', file));
}

const VARIANTS = [
  { name: 'base, no SDK', dir: base, env: {} },
  { name: 'no SDK', dir: tree, env: {} },
  { name: 'SDK', dir: tree, env: { VIEWSYNC_BENCH_OTEL: '1' } },
  { name: 'SDK, no async context', dir: tree, env: { VIEWSYNC_BENCH_OTEL: 'nocontext' } },
] as const;

/** The figures compared: all times, lower is better (`higher` would mark a rate). */
const FIGURES: ReadonlyArray<{ label: string; unit: string; higher: boolean }> = [
  // Medians, not rates: a rate counts every GC pause and every moment another process ran.
  { label: 'push, batch of 1', unit: 'µs median', higher: false },
  { label: 'push, batch of 10', unit: 'µs median', higher: false },
  { label: 'push, batch of 100', unit: 'µs median', higher: false },
  { label: 'incremental pull, 10 changes, 1k entries', unit: 'µs median', higher: false },
  { label: 'incremental pull, 10 changes, 100k entries', unit: 'µs median', higher: false },
  { label: 'full pull, 100k entries', unit: 'ms/pull', higher: false },
];

const results = new Map<string, number[][]>(VARIANTS.map(({ name }) => [name, FIGURES.map(() => [])]));
for (let round = 0; round < rounds; round++) {
  for (let i = 0; i < VARIANTS.length; i++) {
    const variant = VARIANTS[(i + round) % VARIANTS.length]!;
    process.stderr.write(`round ${round + 1}/${rounds}: ${variant.name}\n`);
    const run = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', 'bench/run.ts'], {
      cwd: variant.dir,
      env: { ...process.env, ...variant.env, VIEWSYNC_BENCH_QUICK: '1', VIEWSYNC_BENCH_JSON: '1' },
      encoding: 'utf8',
      maxBuffer: 16 * 2 ** 20,
    });
    if (run.status !== 0) throw new Error(`${variant.name}: bench/run.ts exited with ${run.status}\n${run.stderr}`);
    const rows = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Row[];
    FIGURES.forEach(({ label, unit }, f) => {
      const row = rows.find((r) => r.benchmark === label && r.unit === unit);
      if (row === undefined) throw new Error(`${variant.name}: no row ${label} (${unit})`);
      results.get(variant.name)![f]!.push(row.value);
    });
  }
}

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const format = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(1));
const names = VARIANTS.map(({ name }) => name);
console.log(`OpenTelemetry cost, ${rounds} rounds, medians (each round: ${names.join(', ')}, rotating)\n`);
console.log(['figure', ...names, 'no SDK / base', 'SDK / no SDK', 'SDK, no async context / no SDK', 'no SDK, min-max', 'base, min-max'].join(' | '));
FIGURES.forEach(({ label, unit, higher }, f) => {
  const [old, none, sdk, bare] = names.map((name) => results.get(name)![f]!);
  // A ratio above 1 is slower, whichever way the unit runs.
  const cost = (a: readonly number[], b: readonly number[]) => (higher ? median(b) / median(a) : median(a) / median(b)).toFixed(3);
  const spread = (values: readonly number[]) => `${format(Math.min(...values))}-${format(Math.max(...values))}`;
  const medians = [old!, none!, sdk!, bare!].map((values) => format(median(values)));
  console.log([`${label} (${unit})`, ...medians, cost(none!, old!), cost(sdk!, none!), cost(bare!, none!), spread(none!), spread(old!)].join(' | '));
});
console.log('\nRatios above 1 are slower than the variant they are divided by.');
