/**
 * How the suites pick their SQLite driver (sqlite-driver.ts), with stand-ins for the two drivers:
 * `npm test` goes on without better-sqlite3, and CI, which asks for it, fails without it.
 */
import { describe, expect, it } from 'vitest';
import { type DriverSources, pickSQLiteDriver, type TestSQLite } from './sqlite-driver.js';

/** A driver class that records how each handle was opened. */
function standIn(opened: Array<[string, unknown]>, fails?: Error): new (path: string, options?: object) => TestSQLite {
  return class {
    constructor(path: string, options?: unknown) {
      if (fails) throw fails;
      opened.push([path, options]);
    }
    prepare(): never {
      throw new Error('a stand-in runs no SQL');
    }
    exec(): never {
      throw new Error('a stand-in runs no SQL');
    }
    close() {}
  };
}

const coded = (code: string, message: string) => Object.assign(new Error(message), { code });
const notInstalled = coded('MODULE_NOT_FOUND', "Cannot find module 'better-sqlite3'\nRequire stack:\n- /work/test/support/sqlite-driver.ts");
const otherABI = coded('ERR_DLOPEN_FAILED', 'The module was compiled against a different Node.js version using NODE_MODULE_VERSION 115.');

function sources(better: { import?: Error; open?: Error }, env: Record<string, string> = {}, nodeSQLite = true) {
  const opened = { better: [] as Array<[string, unknown]>, node: [] as Array<[string, unknown]> };
  const given: DriverSources = {
    betterSQLite: async () => {
      if (better.import) throw better.import;
      return standIn(opened.better, better.open);
    },
    nodeSQLite: async () => {
      if (!nodeSQLite) throw coded('ERR_UNKNOWN_BUILTIN_MODULE', 'No such built-in module: node:sqlite');
      return standIn(opened.node);
    },
    env,
  };
  return { given, opened };
}

describe('the suites’ SQLite driver', () => {
  it('is better-sqlite3 where it loads, files opened read-only when asked', async () => {
    const { given, opened } = sources({});
    const driver = await pickSQLiteDriver(given);
    expect([driver.name, driver.missing]).toEqual(['better-sqlite3', undefined]);
    driver.open('a.db', { readOnly: true });
    expect(opened.better).toEqual([
      [':memory:', undefined],
      ['a.db', { readonly: true }],
    ]);
  });

  it.each([
    ['not installed', { import: notInstalled }, /^better-sqlite3 is not installed/],
    ['built for another Node', { open: otherABI }, /^the installed better-sqlite3 is built for another Node/],
  ])('is node:sqlite where better-sqlite3 is %s, saying why', async (_, better, why) => {
    const { given, opened } = sources(better);
    const driver = await pickSQLiteDriver(given);
    expect(driver.name).toBe('node:sqlite');
    expect(driver.missing).toMatch(why);
    driver.open('b.db', { readOnly: true });
    expect(opened.node).toEqual([['b.db', { readOnly: true }]]);
  });

  it.each([notInstalled, otherABI])('fails without better-sqlite3 under VIEWSYNC_REQUIRE_BETTER_SQLITE=1, as CI runs the main suite (%s)', async (error) => {
    const failing = error === notInstalled ? { import: error } : { open: error };
    await expect(pickSQLiteDriver(sources(failing, { VIEWSYNC_REQUIRE_BETTER_SQLITE: '1' }).given)).rejects.toThrow(
      `VIEWSYNC_REQUIRE_BETTER_SQLITE=1, but better-sqlite3 did not load: ${error.message}`,
    );
  });

  const unreadable = coded('ERR_DLOPEN_FAILED', 'better_sqlite3.node: cannot open shared object file: Permission denied');
  const brokenInstall = coded('MODULE_NOT_FOUND', "Cannot find module 'bindings'\nRequire stack:\n- /work/node_modules/better-sqlite3/lib/database.js");
  it.each([
    ['a native build that cannot be read', { open: unreadable }, unreadable],
    ['a dependency of it missing', { import: brokenInstall }, brokenInstall],
  ])('fails on any other failure to load better-sqlite3 (%s), rather than hide it behind another driver', async (_, better, error) => {
    await expect(pickSQLiteDriver(sources(better).given)).rejects.toBe(error);
  });

  it('fails clearly on a Node with neither driver', async () => {
    await expect(pickSQLiteDriver(sources({ import: notInstalled }, {}, false).given)).rejects.toThrow(
      /^No SQLite driver for the tests: better-sqlite3 is not installed .*, and Node v[\d.]+ has no node:sqlite \(Node 22\.15 or later has\)$/,
    );
  });
});
