/**
 * The processes of a chaos run (servers, CLI movers), each watched: one that ends without the
 * suite having killed or stopped it is recorded as a crash, with the end of its output, which the
 * checker counts as an anomaly ("no process ends unless the suite killed it").
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const LOG_DIR = process.env.CHAOS_LOG_DIR;
if (LOG_DIR) mkdirSync(LOG_DIR, { recursive: true });

const bundles = new Map<string, Promise<string>>();

/**
 * `entry` (a TypeScript file of the repository) bundled into one ES module, its packages left to
 * node_modules, made once per process: a server killed -9 starts again in a second or two on a
 * busy machine, where tsx took five to eight.
 */
export function bundled(entry: string): Promise<string> {
  let made = bundles.get(entry);
  if (made === undefined) {
    const outfile = join(ROOT, 'node_modules/.cache/viewsync-chaos', `${process.pid}-${entry.replaceAll('/', '-').replace(/\.ts$/, '')}.mjs`);
    made = build({ entryPoints: [join(ROOT, entry)], bundle: true, platform: 'node', format: 'esm', packages: 'external', outfile, logLevel: 'warning' }).then(
      () => outfile,
    );
    process.once('exit', () => rmSync(outfile, { force: true }));
    bundles.set(entry, made);
  }
  return made;
}

export class Watched {
  readonly label: string;
  readonly #args: string[];
  readonly #env: Record<string, string>;
  readonly #crashes: string[];
  #child: ChildProcess | undefined;
  #expected = false;
  #output = '';
  #ready = false;
  #exited: Promise<void> = Promise.resolve();
  url: string | undefined;

  /** A Node process running `script` (a bundle: see {@link bundled}) with `env`; an end the suite did not cause is recorded in `crashes`. */
  constructor(label: string, script: string, env: Record<string, string>, crashes: string[]) {
    this.label = label;
    this.#args = [script];
    this.#env = env;
    this.#crashes = crashes;
  }

  get up(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /** The end of what it printed. */
  tail(chars = 2_000): string {
    return this.#output.slice(-chars);
  }

  /** Starts it and resolves once it prints a line `{"url": …}` (servers), or at once with `ready: false`. */
  start({ ready = true, timeoutMs = 60_000 } = {}): Promise<void> {
    // A command (ready: false) ends by itself: its exit code is the caller's to judge.
    this.#expected = !ready;
    // A server's stdin is a pipe it watches: when this process dies, however it dies, the pipe
    // closes and the server ends too, rather than live on holding its port.
    const child = spawn(process.execPath, this.#args, { cwd: ROOT, env: { ...process.env, ...this.#env }, stdio: [ready ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    this.#child = child;
    this.#output = '';
    this.#ready = false;
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const started = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.label} did not start within ${timeoutMs / 1000} s:\n${this.tail()}`)), timeoutMs);
      const onData = (text: string) => {
        this.#output = (this.#output + text).slice(-20_000);
        // Kept whole only when asked (CHAOS_LOG_DIR): a stall is read from the servers' own lines.
        if (LOG_DIR)
          appendFileSync(join(LOG_DIR, `${this.label.replaceAll(/[^\w.-]/g, '_')}.log`), text.replaceAll(/^(?=.)/gm, `${new Date().toISOString()} `));
        const match = ready ? this.#output.match(/\{"url":"([^"]+)"/) : null;
        if (match && child === this.#child && !this.#ready) {
          this.#ready = true;
          this.url = match[1];
          // Started again after a kill, it listens where it did: clients keep their URL.
          this.#env.PORT = new URL(match[1]!).port;
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.setEncoding('utf8').on('data', onData);
      child.stderr!.setEncoding('utf8').on('data', onData);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        if (!this.#expected) {
          this.#crashes.push(`${this.label} ended by itself (${signal ?? `code ${code}`}):\n${this.tail()}`);
          reject(new Error(`${this.label} exited (${signal ?? `code ${code}`}):\n${this.tail()}`));
        }
      });
      if (!ready) {
        clearTimeout(timer);
        resolve();
      }
    });
    return started;
  }

  /** Resolves with its exit code once it ends by itself (a CLI command); a crash is not recorded then. */
  async finished(): Promise<number | null> {
    this.#expected = true;
    await this.#exited;
    return this.#child?.exitCode ?? null;
  }

  /** kill -9, as a crash. */
  async kill(): Promise<void> {
    this.#expected = true;
    this.#child?.kill('SIGKILL');
    await this.#exited;
  }

  /** SIGTERM, then SIGKILL after 5 s. */
  async stop(): Promise<void> {
    if (!this.up) return;
    this.#expected = true;
    this.#child!.kill('SIGTERM');
    const timer = setTimeout(() => this.#child?.kill('SIGKILL'), 5_000);
    await this.#exited;
    clearTimeout(timer);
  }
}
