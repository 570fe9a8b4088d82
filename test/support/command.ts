import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';

/** A command started by {@link startCommand}, ready. */
export interface Started {
  /** What it printed (stdout and stderr) so far. */
  readonly output: () => string;
  /** The first match of `ready` in its output (empty without `ready`). */
  readonly match: RegExpMatchArray | [];
  /** Stops it (SIGTERM, then SIGKILL after 5 s) and resolves once it has exited. */
  stop(): Promise<void>;
  /** Sends `signal` to its whole process group now (SIGKILL: as a crash, with no clean-up). */
  kill(signal: NodeJS.Signals): void;
}

/**
 * Starts a command and resolves once its output matches `ready` (at once without one); rejects,
 * with its output, when it exits first or prints no match within `timeoutMs`. Its whole process group is stopped, so
 * a wrapper (npx, wrangler) takes its children down with it.
 */
export function startCommand(
  command: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string>; ready?: RegExp; timeoutMs?: number; openStdin?: boolean },
): Promise<Started> {
  // `openStdin`: a standard input that stays open, as a terminal's does (esbuild's serve mode stops when it closes).
  const stdin = options.openStdin ? 'pipe' : 'ignore';
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...process.env, NO_COLOR: '1', ...options.env },
    stdio: [stdin, 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const exited = new Promise<string>((resolve) => {
    child.once('error', (error) => resolve(`could not start: ${error.message}`));
    child.once('exit', (code, signal) => resolve(`exited with ${signal ?? `code ${code}`}`));
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    kill(child, 'SIGTERM');
    const timer = setTimeout(() => kill(child, 'SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  return new Promise<Started>((resolve, reject) => {
    const fail = (why: string) => (void stop(), reject(new Error(`${command} ${args.join(' ')}: ${why}\n--- output ---\n${output}`)));
    const timer = setTimeout(
      () => fail(`printed nothing matching ${options.ready} within ${(options.timeoutMs ?? 30_000) / 1000} s`),
      options.timeoutMs ?? 30_000,
    );
    const onData = (text: string) => {
      output += text;
      const match = options.ready && output.match(options.ready);
      if (match) clearTimeout(timer), resolve({ output: () => output, match, stop, kill: (signal) => kill(child, signal) });
    };
    if (options.ready === undefined) clearTimeout(timer), resolve({ output: () => output, match: [], stop, kill: (signal) => kill(child, signal) });
    child.stdout!.setEncoding('utf8').on('data', onData);
    child.stderr!.setEncoding('utf8').on('data', onData);
    void exited.then((why) => (clearTimeout(timer), fail(why)));
  });
}

/** Runs a command to its end: its exit code and output. */
export function runCommand(
  command: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string> },
): Promise<{ code: number | null; output: string }> {
  const child = spawn(command, args, { cwd: options.cwd, env: { ...process.env, NO_COLOR: '1', ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (output += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (output += text));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, output })));
}

/** Whether process `pid` is alive (a process of another user's counts). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}

/** A port nothing listens on now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function kill(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // Already gone.
  }
}
