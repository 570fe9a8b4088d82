/**
 * What a move refuses, leaving every store as it was: a space its router places elsewhere than
 * the servers do, in either direction; a router that lacks the servers' directory, or names
 * another; a space no store holds. A move never removes rows it did not write itself.
 */
import { describe, expect, it } from 'vitest';
import { memoryStorage, type Storage, type SyncContext } from '../../src/index.js';
import { moveSpace } from '../../src/ops.js';
import type { StoredValue } from '../../src/store.js';
import { rendezvous } from '../../src/route/placement.js';
import { routedStorage } from '../../src/route/routed-storage.js';
import { mutation } from '../support/helpers.js';
import { pullFrom, pushTo, spaceContext } from './support.js';

/** Every row of every store: what a refused move must leave as it was. */
async function everything(stores: Record<string, Storage>): Promise<Record<string, ReadonlyArray<readonly [string, StoredValue]>>> {
  const rows = await Promise.all(Object.values(stores).map((store) => store.transaction((tx) => tx.scan({ prefix: '' }), { readOnly: true })));
  return Object.fromEntries(Object.keys(stores).map((name, i) => [name, rows[i]!]));
}

/** 50 entries of `space`, pushed by three client groups (their clients' lastMutationIDs 17, 17 and 16). */
async function seed(ctx: SyncContext, space: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const response = await pushTo(ctx, space, `g${i % 3}`, [mutation(`c${i % 3}`, Math.floor(i / 3) + 1, 'put', { key: `todo/${i}`, value: i })]);
    expect(response.status).toBe(200);
  }
}

/** What each group's full pull of `space` gives: its entries and its client's lastMutationID. */
async function served(ctx: SyncContext, space: string): Promise<Array<{ entries: number; lastMutationIDChanges: Record<string, number> }>> {
  const pulls = [];
  for (let group = 0; group < 3; group++) {
    const response = await pullFrom(ctx, space, `g${group}`, null);
    expect(response.status, await response.clone().text()).toBe(200);
    const body = (await response.json()) as { patch: Array<{ op: string }>; lastMutationIDChanges: Record<string, number> };
    pulls.push({ entries: body.patch.filter(({ op }) => op === 'put').length, lastMutationIDChanges: body.lastMutationIDChanges });
  }
  return pulls;
}

const WHOLE = [
  { entries: 50, lastMutationIDChanges: { c0: 17 } },
  { entries: 50, lastMutationIDChanges: { c1: 17 } },
  { entries: 50, lastMutationIDChanges: { c2: 16 } },
];

describe('a move refuses, and changes nothing,', () => {
  // acme's hash home among a, b and c is c.
  it('setup: acme hashes to c', () => expect(rendezvous('acme', ['a', 'b', 'c'])).toBe('c'));

  it('when its router places the space elsewhere than the servers do: "from c to b" would have cleared b, where the space is', async () => {
    const members = { a: memoryStorage(), b: memoryStorage(), c: memoryStorage() };
    const servers = spaceContext(routedStorage({ stores: members, place: () => 'b' }));
    await seed(servers, 'acme');
    const before = await everything(members);
    // The CLI's router, by hash: it takes the empty c for the copy in use.
    const byHash = spaceContext(routedStorage({ stores: members }));
    await expect(moveSpace(byHash, 'acme', 'b')).rejects.toThrow(
      /store "b" holds rows of space "acme".*this router finds its copy in use in "c".*placement.*not the servers'/,
    );
    expect(await everything(members)).toEqual(before);
    expect(await served(servers, 'acme')).toEqual(WHOLE);
  });

  it('when its router places the space elsewhere, moving it to a third store: the servers would go on reading b, the copy in a', async () => {
    const members = { a: memoryStorage(), b: memoryStorage(), c: memoryStorage() };
    const servers = spaceContext(routedStorage({ stores: members, place: () => 'b' }));
    await seed(servers, 'acme');
    const before = await everything(members);
    await expect(moveSpace(spaceContext(routedStorage({ stores: members })), 'acme', 'a')).rejects.toThrow(/store "b" holds rows of space "acme"/);
    expect(await everything(members)).toEqual(before);
    expect(await served(servers, 'acme')).toEqual(WHOLE);
  });

  it('the other way round: servers by hash (acme in c), a router told b', async () => {
    const members = { a: memoryStorage(), b: memoryStorage(), c: memoryStorage() };
    const servers = spaceContext(routedStorage({ stores: members }));
    await seed(servers, 'acme');
    const before = await everything(members);
    const toldB = spaceContext(routedStorage({ stores: members, place: () => 'b' }));
    for (const to of ['c', 'a']) await expect(moveSpace(toldB, 'acme', to), to).rejects.toThrow(/store "c" holds rows of space "acme".*in use in "b"/);
    expect(await everything(members)).toEqual(before);
    expect(await served(servers, 'acme')).toEqual(WHOLE);
  });

  it('when two stores each hold a copy that could be in use', async () => {
    const members = { a: memoryStorage(), b: memoryStorage(), c: memoryStorage() };
    await seed(spaceContext(routedStorage({ stores: members, place: () => 'b' })), 'acme');
    await seed(spaceContext(routedStorage({ stores: members, place: () => 'c' })), 'acme');
    const before = await everything(members);
    await expect(moveSpace(spaceContext(routedStorage({ stores: members })), 'acme', 'a')).rejects.toThrow(
      /stores "b" and "c" each hold a copy of space "acme" that could be the one in use/,
    );
    expect(await everything(members)).toEqual(before);
  });

  it('when its router has no directory, or another, while a store keeps one for the space', async () => {
    const members = { a: memoryStorage(), b: memoryStorage(), c: memoryStorage() };
    const servers = spaceContext(routedStorage({ stores: members, directory: 'a', place: () => 'b' }));
    await seed(servers, 'acme');
    const before = await everything(members);
    // It finds the space where it is, and would move it, but the directory would go on naming b.
    const without = spaceContext(routedStorage({ stores: members, place: () => 'b' }));
    await expect(moveSpace(without, 'acme', 'c')).rejects.toThrow(
      /store "a" keeps a directory, which lists space "acme" in "b", but this router has none: give it directory: 'a' as the servers do \(CLI: --directory a\)/,
    );
    const other = spaceContext(routedStorage({ stores: members, directory: 'c', place: () => 'b' }));
    await expect(moveSpace(other, 'acme', 'a')).rejects.toThrow(
      /store "a" keeps a directory, which lists space "acme" in "b", but this router's directory is "c"/,
    );
    expect(await everything(members)).toEqual(before);
    expect(await served(servers, 'acme')).toEqual(WHOLE);
  });

  it('when no store holds the space: nothing is written, not even a route record or a directory row', async () => {
    const members = { a: memoryStorage(), b: memoryStorage(), c: memoryStorage() };
    const servers = spaceContext(routedStorage({ stores: members, directory: 'a' }));
    await seed(servers, 'acme');
    const before = await everything(members);
    for (const ctx of [servers, spaceContext(routedStorage({ stores: members }))]) {
      await expect(moveSpace(ctx, 'acme-typo', 'b')).rejects.toThrow(
        /space "acme-typo" does not exist: no store \(a, b, c\) holds any row of it; nothing was moved or written/,
      );
    }
    expect(await everything(members)).toEqual(before);
  });

  it('but clears a target whose rows a move left there: a killed move run again finishes', async () => {
    const members = { a: memoryStorage(), b: memoryStorage(), c: memoryStorage() };
    const servers = spaceContext(routedStorage({ stores: members, place: () => 'b' }));
    await seed(servers, 'acme');
    const killed = moveSpace(servers, 'acme', 'c', {
      onProgress: ({ phase }) => {
        if (phase === 'catching-up') throw new Error('killed');
      },
    });
    await expect(killed).rejects.toThrow('killed');
    expect(await moveSpace(servers, 'acme', 'c')).toMatchObject({ from: 'b', to: 'c', moved: true });
    // Back to b, whose rows a move left (its route record says the space went to c): cleared and filled again.
    expect(await moveSpace(servers, 'acme', 'b')).toMatchObject({ from: 'c', to: 'b', moved: true });
    expect(await served(servers, 'acme')).toEqual(WHOLE);
  });
});
