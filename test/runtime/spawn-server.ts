import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { RunningServer } from './suite.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Runs a server entry script (`servers/*.js`) in another runtime, from `node_modules/.bin`, and
 * resolves once it prints its `{"url": …}` line. The script serves until its stdin closes, then
 * calls its adapter's `stop()`: `stop` here closes stdin and expects the process to exit on its
 * own, so a `stop()` that leaves a listener or connection open fails the test. Every wait is
 * bounded, and every failure names the command and shows the runtime's stderr.
 */
export function spawnServer(bin: string, args: string[], env: Record<string, string> = {}, startTimeoutMs = 30_000): Promise<RunningServer> {
  const path = `${root}node_modules/.bin/${bin}`;
  if (!existsSync(path)) return Promise.reject(new Error(`${path} is missing: \`${bin}\` is a devDependency, run \`npm ci\``));
  const command = `${bin} ${args.join(' ')}`;
  const child = spawn(path, args, { cwd: root, env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  // A runtime that died already makes closing its stdin fail with EPIPE; `exited` reports that.
  child.stdin.on('error', () => {});
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr = (stderr + text).slice(-4000)));
  const exited = new Promise<string>((resolve) => {
    child.once('error', (error) => resolve(`could not start: ${error.message}`));
    child.once('exit', (code, signal) => resolve(`exited with ${signal ?? `code ${code}`}`));
  });
  const fail = (why: string) => new Error(`${command}: ${why}\n--- stderr ---\n${stderr || '(empty)'}\n--- stdout ---\n${stdout || '(empty)'}`);

  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.stdin.end();
    const outcome = await Promise.race([exited, delay(5_000, 'timeout')]);
    if (outcome !== 'timeout') return;
    child.kill('SIGKILL');
    await exited;
    throw fail('still running 5 s after stdin closed: its stop() did not shut the server down');
  };

  return new Promise<RunningServer>((resolve, reject) => {
    const timer = setTimeout(() => reject(fail(`printed no URL within ${startTimeoutMs / 1000} s`)), startTimeoutMs);
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
      const [line, rest] = stdout.split('\n', 2);
      if (rest === undefined) return;
      clearTimeout(timer);
      try {
        resolve({ url: new URL((JSON.parse(line!) as { url: string }).url), stop });
      } catch {
        reject(fail('its first line is not {"url": "…"}'));
      }
    });
    void exited.then((why) => (clearTimeout(timer), reject(fail(`${why} before printing its URL`))));
  }).catch((error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });
}

function delay<T>(ms: number, value: T): Promise<T> {
  return new Promise((resolve) => setTimeout(resolve, ms, value).unref());
}
