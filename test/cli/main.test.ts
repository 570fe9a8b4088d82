/**
 * The CLI's answers to a command line that does not do what was asked, run in process (main()):
 * the exit code, and a message that says what to do. The packed bin is run as a process in
 * cli.e2e.test.ts; these are the fast loop's.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { createContext } from '../../src/index.js';
import { transact } from '../../src/backend.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite } from '../support/sqlite-driver.js';

const work = mkdtempSync(join(tmpdir(), 'viewsync-cli-main-'));

/** Runs the CLI in process on `argv`: its exit code and what it wrote. */
async function run(argv: string[], env: Record<string, string | undefined> = {}): Promise<{ status: number; stdout: string; stderr: string; ms: number }> {
  let [stdout, stderr] = ['', ''];
  const out = vi
    .spyOn(process.stdout, 'write')
    .mockImplementation((chunk: string | Uint8Array, ...rest: unknown[]) => ((stdout += String(chunk)), callBack(rest), true));
  const err = vi
    .spyOn(process.stderr, 'write')
    .mockImplementation((chunk: string | Uint8Array, ...rest: unknown[]) => ((stderr += String(chunk)), callBack(rest), true));
  for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
  const started = performance.now();
  try {
    const status = await main(argv);
    return { status, stdout, stderr, ms: performance.now() - started };
  } finally {
    out.mockRestore();
    err.mockRestore();
    vi.unstubAllEnvs();
  }
}

function callBack(rest: unknown[]): void {
  const done = rest.find((each) => typeof each === 'function') as (() => void) | undefined;
  done?.();
}

/** A SQLite file with the feed on, holding space `s` at version 2 (one change a version). */
async function fileWithSpace(name: string): Promise<string> {
  const file = join(work, name);
  const db = openSQLite(file);
  const ctx = createContext({ storage: sqliteStorage(db), mutators: {}, changes: {}, pokes: false, onError: () => {} });
  await transact(ctx, 's', (tx) => tx.set('a', 1));
  await transact(ctx, 's', (tx) => tx.set('a', 2));
  await transact(ctx, 'acme', (tx) => tx.set('b', 1));
  db.close();
  return file;
}

afterEach(() => vi.restoreAllMocks());

describe('the CLI on a command line that does not do what was asked', () => {
  it('bare viewsync prints the help on stderr and exits 2; --help and help exit 0', async () => {
    const bare = await run([]);
    expect([bare.status, bare.stdout]).toEqual([2, '']);
    expect(bare.stderr).toMatch(/Commands:[\s\S]*viewsync: give a command \(above\)\n$/);
    for (const asked of [['--help'], ['help'], ['help', 'inspect']]) {
      const help = await run(asked);
      expect([help.status, help.stderr], asked.join(' ')).toEqual([0, '']);
      expect(help.stdout, asked.join(' ')).toMatch(asked[1] === 'inspect' ? /^Usage: viewsync inspect/ : /Commands:/);
    }
  });

  it('a mistyped option or command gets a "did you mean"', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['inspect', '--jsno', '--sqlite', 'x.db'], /^viewsync: Unknown option '--jsno': did you mean --json\?\n/],
      [['inspect', '--sqlit', 'x.db'], /^viewsync: Unknown option '--sqlit': did you mean --sqlite\?\n/],
      [['gc', '--tombstone', '30d'], /^viewsync: Unknown option '--tombstone': did you mean --tombstones\?\n/],
      [['inpsect'], /^viewsync: Unknown command "inpsect": did you mean inspect\?\n/],
      // Nothing near: no guess, and how to pass a SPACE that starts with '-'.
      [['inspect', '--bogus'], /^viewsync: Unknown option '--bogus' \(a SPACE that starts with '-' goes after '--': viewsync inspect -- --bogus\)\n/],
      [['frobnicate'], /^viewsync: Unknown command "frobnicate"\n/],
    ];
    for (const [argv, message] of cases) {
      const answer = await run(argv);
      expect([answer.status, answer.stdout], argv.join(' ')).toEqual([2, '']);
      expect(answer.stderr, argv.join(' ')).toMatch(message);
      expect(answer.stderr, argv.join(' ')).toMatch(/Run 'viewsync --help' for usage\.\n$/);
    }
  });

  it("a URL that is not PostgreSQL's is refused at once, exit 2, its password never quoted", async () => {
    const cases: Array<[string[], Record<string, string | undefined>, RegExp]> = [
      [
        ['inspect', '--postgres', 'http://someone:hunter2@127.0.0.1:9/db'],
        {},
        /^viewsync: --postgres takes a PostgreSQL URL, postgres:\/\/user:password@host:port\/database \(or postgresql:\/\/\), got a http: URL\n/,
      ],
      [['inspect'], { DATABASE_URL: 'https://someone:hunter2@127.0.0.1:9/db' }, /^viewsync: DATABASE_URL takes a PostgreSQL URL, .* got a https: URL\n/],
      [['inspect', '--postgres', '127.0.0.1:5432/db'], {}, /^viewsync: --postgres takes a PostgreSQL URL, .* got no scheme\n/],
      [
        ['inspect', '--store', 'a=http://someone:hunter2@127.0.0.1:9/db', '--store', `b=${join(work, 'b.db')}`],
        {},
        /^viewsync: --store a=… is a http: URL: a store is a postgres:\/\/ URL or a SQLite file\n/,
      ],
    ];
    for (const [argv, env, message] of cases) {
      const answer = await run(argv, env);
      expect([answer.status, answer.stdout], argv.join(' ')).toEqual([2, '']);
      expect(answer.stderr, argv.join(' ')).toMatch(message);
      expect(answer.stderr).not.toMatch(/hunter2/);
      // Refused before any connection: nothing waited out --connect-timeout (10 s).
      expect(answer.ms).toBeLessThan(5_000);
    }
  });

  it('inspect and changes of a space the store does not hold exit 1, naming the nearest space', async () => {
    const file = await fileWithSpace('spaces.db');
    for (const command of ['inspect', 'changes']) {
      const typo = await run([command, 'acm', '--sqlite', file]);
      expect([typo.status, typo.stdout], command).toEqual([1, '']);
      expect(typo.stderr, command).toBe(
        `viewsync: space "acm" does not exist: ${file} holds nothing of it (did you mean "acme"?). 'viewsync inspect' lists the spaces (quote the default space as '')\n`,
      );
      const none = await run([command, 'nothing-like-it', '--sqlite', file]);
      expect([none.status, none.stderr], command).toEqual([
        1,
        expect.stringMatching(/^viewsync: space "nothing-like-it" does not exist: .* holds nothing of it\. 'viewsync inspect'/),
      ]);
    }
    // A space the store holds still answers, exit 0.
    const held = await run(['inspect', 'acme', '--sqlite', file, '--json']);
    expect([held.status, JSON.parse(held.stdout).space]).toEqual([0, 'acme']);
    expect((await run(['changes', 's', '--sqlite', file])).stdout.trim().split('\n')).toHaveLength(2);
  });

  it('a cursor one ahead of its space is told as a mistake of the command line, not as lost commits', async () => {
    const file = await fileWithSpace('ahead.db');
    const ahead = await run(['changes', 's', '--sqlite', file, '--after', '3']);
    expect([ahead.status, ahead.stdout]).toEqual([1, '']);
    expect(ahead.stderr).toMatch(
      /^viewsync: The cursor 3 is ahead of space "s", at version 2, so this space's feed has not given it out: it is another space's, or made by hand \(a cursor names the last version read, not the next: "2" reads what comes after version 2\)/,
    );
    expect(ahead.stderr).not.toMatch(/its store lost commits/);
  });
});
