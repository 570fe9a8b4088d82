/**
 * What an operator sees of schema versions with the CLI: `inspect` counts each space's active
 * client groups by the schema version they sync with (so they know when an old version's window
 * can close), and `inspect SPACE` lists the mutations of older versions that could not be
 * applied, with every client-sent string escaped.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createContext, handlePush, type Mutators } from '../../src/index.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite } from '../support/sqlite-driver.js';
import { mutation, post, pushBody } from '../support/helpers.js';
import { mutatorsV2, schemaV2 } from '../schema/app.js';
import { sh, work } from './process.js';

describe('the CLI and schema versions', () => {
  it('inspect shows active groups by schema version, and a space’s rejected mutations', async () => {
    const file = join(work, 'schema.db');
    const db = openSQLite(file);
    const ctx = createContext({
      storage: sqliteStorage(db),
      mutators: mutatorsV2 as unknown as Mutators,
      schema: { ...schemaV2, older: [{ ...schemaV2.older![0]!, mutators: { ...schemaV2.older![0]!.mutators, removeTodo: null } }] },
      space: () => 's',
      onError: () => {},
    });
    const pushAs = async (schemaVersion: string, group: string, mutations: ReturnType<typeof mutation>[]) =>
      expect((await handlePush(post('/push', pushBody(group, mutations, { schemaVersion })), ctx)).status).toBe(200);
    await pushAs('1', 'old-tab', [
      mutation('c1', 1, 'addTodo', { id: 'a', text: 'Milk' }),
      mutation('c1', 2, 'removeTodo', { id: 'a' }),
      mutation('c1', 3, 'gone\u001b[2J', { evil: '\u0007' }),
    ]);
    await pushAs('2', 'new-tab', [mutation('c2', 1, 'addTodo', { id: 'b', title: 'Eggs' })]);
    await pushAs('2', 'other-tab', [mutation('c3', 1, 'bump', { id: 'b', by: 1 })]);
    db.close();

    const all = sh(`viewsync inspect --sqlite ${file}`);
    expect([all.status, all.stderr]).toEqual([0, '']);
    expect(all.stdout).toMatch(/GROUPS BY SCHEMA \(7 days\)\n"s" .* "1":1 "2":2\n/);
    const detail = sh(`viewsync inspect s --sqlite ${file}`);
    expect([detail.status, detail.stderr]).toEqual([0, '']);
    expect(detail.stdout).toContain('Mutations of older schema versions that could not be applied: 2\n');
    expect(detail.stdout).toMatch(
      /\n\d{4}-[\d: -]+\s+1\s+old-tab\s+c1#2\s+removeTodo\s+\{"id":"a"\}\s+MutationUpgradeError: Schema version "1" no longer applies/,
    );
    // The client's control characters are printed escaped, never as they are.
    expect(detail.stdout).toContain('gone\\u001b[2J');
    expect(detail.stdout).not.toMatch(/[\u0007\u001b]/);
    expect(detail.stdout).toMatch(/SCHEMA\s+CLIENTS \(lastMutationID\)\n/);
    expect(detail.stdout).toMatch(/\(anonymous\)\s+old-tab\s+[\d: -]+\s+"1"\s+c1=3/);
    const json = JSON.parse(sh(`viewsync inspect s --json --sqlite ${file}`).stdout) as {
      rejectedMutations: Array<{ id: number }>;
      schemaVersions: Record<string, number>;
    };
    expect(json.rejectedMutations.map(({ id }) => id)).toEqual([2, 3]);
    expect(json.schemaVersions).toEqual({ '1': 1, '2': 2 });
  });
});
