/**
 * What OpenTelemetry costs on push and pull: bench/run.ts (quick: up to 100k entries) on this
 * tree without an SDK, on this tree under one (VIEWSYNC_BENCH_OTEL=1), and on another checkout
 * without one (the build before telemetry), run in turn, `ROUNDS` times, in a rotating order so
 * that no variant always runs first or on a warmer machine. Each variant's figure is the median
 * of its rounds; ratios are against this tree without an SDK.
 *
 * The other checkout runs this tree's bench files against its own src/, so the instrument is the
 * same and only the library differs:
 *
 *   git worktree add /tmp/base 0a15cf5 && ln -s "$PWD/node_modules" /tmp/base/node_modules
 *   node --import tsx bench/otel-compare.ts /tmp/base 3
 *
 * Takes about 30 s a run (9 runs for 3 rounds). Not part of `npm test`.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Row } from './table.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = resolve(here, '..');
const base = resolve(process.argv[2] ?? '/tmp/base');
const rounds = Number(process.argv[3] ?? 3);
if (base === root || !existsSync(join(base, 'src/index.ts')) || !existsSync(join(base, 'node_modules'))) {
  throw new Error(`${base} must be another checkout of viewsync with node_modules (see this file's header)`);
}
for (const file of readdirSync(here).filter((name) => name.endsWith('.ts'))) copyFileSync(join(here, file), join(base, 'bench', file));

const VARIANTS = [
  { name: 'no SDK', dir: root, env: {} },
  { name: 'SDK', dir: root, env: { VIEWSYNC_BENCH_OTEL: '1' } },
  { name: 'base, no SDK', dir: base, env: {} },
] as const;

/** The figures compared: higher is better for rates, lower for times. */
const FIGURES = [
  { label: 'push, batch of 1', unit: 'pushes/s', higher: true },
  { label: 'push, batch of 10', unit: 'pushes/s', higher: true },
  { label: 'push, batch of 100', unit: 'pushes/s', higher: true },
  { label: 'incremental pull, 10 changes, 1k entries', unit: 'µs median', higher: false },
  { label: 'incremental pull, 10 changes, 100k entries', unit: 'µs median', higher: false },
  { label: 'full pull, 100k entries', unit: 'ms/pull', higher: false },
] as const;

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
console.log(`OpenTelemetry cost, ${rounds} rounds, medians (each round: ${VARIANTS.map(({ name }) => name).join(', ')}, rotating)\n`);
console.log(['figure', ...VARIANTS.map(({ name }) => name), 'SDK / no SDK', 'no SDK / base', 'spread (no SDK, min-max)'].join(' | '));
FIGURES.forEach(({ label, unit, higher }, f) => {
  const [none, sdk, old] = VARIANTS.map(({ name }) => results.get(name)![f]!);
  // A ratio above 1 is slower, whichever way the unit runs.
  const cost = (a: number, b: number) => (higher ? b / a : a / b).toFixed(3);
  const spread = `${format(Math.min(...none!))}-${format(Math.max(...none!))}`;
  console.log([`${label} (${unit})`, format(median(none!)), format(median(sdk!)), format(median(old!)), cost(median(sdk!), median(none!)), cost(median(none!), median(old!)), spread].join(' | '));
});
console.log('\nRatios above 1 are slower (more time, fewer pushes/s) than the right-hand variant.');
