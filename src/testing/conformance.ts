import type { Storage } from '../storage/types.js';
import { valuesChecks } from './checks/values.js';
import { scansChecks } from './checks/scans.js';
import { transactionsChecks } from './checks/transactions.js';
import { spacesChecks } from './checks/spaces.js';
import { lanesChecks } from './checks/lanes.js';

/** One check of the conformance suite: a name and a function that throws when the store fails it. */
export interface ConformanceCheck {
  /** What it checks, with its group: `scan > limit caps the entries returned: …`. */
  name: string;
  /** Resolves when the store passes; rejects (an `AssertionError`, or the store's own error) when not. */
  run(): Promise<void>;
}

/** Options for {@link storageConformance}. */
export interface ConformanceOptions {
  /** Cases per property check (fast-check). Default: 200. */
  runs?: number;
  /**
   * The store runs one transaction at a time (one connection, such as PGlite): it skips the
   * check that one space's reads and writes go on while another space's transaction waits.
   * Default: false.
   */
  oneAtATime?: boolean;
  /**
   * The store locks a space's write lanes apart (`WriteLane`, as PostgreSQL and SQLite do): it
   * is also checked that a deliveries transaction goes on while a data transaction of its space
   * waits. Default: false (a store may lock the whole space for each).
   */
  lanesApart?: boolean;
}

/**
 * The storage conformance suite: a check for every guarantee of {@link Storage}, each able to
 * fail when its guarantee is broken. Every store of viewsync passes it; run it against a store
 * of your own (Redis, DynamoDB, MySQL…) in any test runner, or none: each check is a name and a
 * function that throws on failure. Needs `fast-check` installed.
 *
 * `create` must return an empty store on every call (a new database, schema or table prefix).
 * Keys and values are well-formed strings (no lone surrogates), U+0000 included.
 *
 * @example
 * import { storageConformance } from 'viewsync/testing';
 * for (const check of storageConformance(() => myStorage())) test(check.name, check.run);
 */
export function storageConformance(create: () => Storage | Promise<Storage>, options: ConformanceOptions = {}): ConformanceCheck[] {
  const RUNS = options.runs ?? 200;
  const checks: ConformanceCheck[] = [];
  const groups: string[] = [];
  const describe = (group: string, body: () => void) => {
    groups.push(group);
    body();
    groups.pop();
  };
  const it = Object.assign((name: string, run: () => Promise<void>) => void checks.push({ name: [...groups, name].join(' > '), run }), {
    each: (rows: ReadonlyArray<readonly [string, boolean]>) => (name: string, run: (label: string, flag: boolean) => Promise<void>) => {
      for (const [label, flag] of rows) it(name.replace('%s', label), () => run(label, flag));
    },
  });
  const suite = { describe, it, create, runs: RUNS, oneAtATime: options.oneAtATime === true, lanesApart: options.lanesApart === true };
  valuesChecks(suite);
  scansChecks(suite);
  transactionsChecks(suite);
  spacesChecks(suite);
  lanesChecks(suite);
  return checks;
}
