/**
 * The `viewsync` CLI as a user runs it: the bin of the packed package, linked as npm links it
 * into a project of its own, run by a shell in a work folder of its own.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { userProject } from '../package/packed.js';

export const project = userProject(['better-sqlite3', 'postgres']);
// The bin as npm links it: `viewsync` on the PATH, a link to the package's dist/cli.js.
export const bin = join(project, 'node_modules', '.bin');
mkdirSync(bin, { recursive: true });
symlinkSync(join(project, 'node_modules', 'viewsync', 'dist', 'cli.js'), join(bin, 'viewsync'));
export const work = mkdtempSync(join(tmpdir(), 'viewsync-cli-'));

/** Runs a shell command line in the work folder with the bin on the PATH. */
export function sh(line: string, env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync('sh', ['-c', line], {
    cwd: work,
    encoding: 'utf8',
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, ...env },
    timeout: 120_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** Runs a shell command line as {@link sh} does, without blocking this process (which may serve it): also how long it took. */
export function shAsync(line: string, env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string; ms: number }> {
  const started = performance.now();
  const child = spawn('sh', ['-c', line], {
    cwd: work,
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let [stdout, stderr] = ['', ''];
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  // A command that never exits fails the test in 60 s, not the whole run.
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) => child.once('close', (status) => (clearTimeout(timer), resolve({ status, stdout, stderr, ms: performance.now() - started }))));
}
