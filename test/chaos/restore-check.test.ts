import { describe, expect, it } from 'vitest';
import type { JSONValue } from '../../src/index.js';
import {
  type HistoryEvidence,
  type HistoryOperation,
  type HistoryRecord,
  judgeHistory,
  type LogRow,
  type OperationAttempt,
  readKey,
  readsWanted,
} from './restore-check.js';

// A space's log, by hand: alice and bob edit doc/a and doc/b, and an operator restores and reverts.
const edit = (version: number, user: string, key: string, before: JSONValue | undefined, after: JSONValue | undefined): LogRow => ({
  version,
  seq: 0,
  key,
  ...(before !== undefined && { before }),
  ...(after !== undefined && { after }),
  by: { kind: 'backend', userID: user },
});
const A1 = { user: 'alice', n: 1 };
const B2 = { user: 'bob', n: 2 };
const B3 = { user: 'bob', n: 3 };
const A4 = { user: 'alice', n: 4 };
const edits: LogRow[] = [
  edit(1, 'alice', 'doc/a', undefined, A1),
  edit(2, 'bob', 'doc/b', undefined, B2),
  edit(3, 'bob', 'doc/a', A1, B3),
  edit(4, 'alice', 'doc/b', B2, A4),
];

const restore: HistoryOperation = { kind: 'restore', space: 's', to: 1, prefix: 'doc/' };
const restoreBy = { kind: 'restore', to: 1, prefix: 'doc/' };
/** Restore to 1 at version 5: doc/a back to alice's, doc/b deleted. */
const restored: LogRow[] = [
  { version: 5, seq: 0, key: 'doc/a', before: B3, after: A1, by: restoreBy },
  { version: 5, seq: 1, key: 'doc/b', before: A4, by: restoreBy },
];
const revert: HistoryOperation = { kind: 'revert', space: 's', cause: { userID: 'bob' }, onConflict: 'skip' };
const revertBy = { kind: 'revert', cause: { userID: 'bob' } };
/** Revert bob's changes at version 5: doc/a back to alice's; doc/b, which alice wrote after bob, a conflict skipped. */
const reverted: LogRow[] = [{ version: 5, seq: 0, key: 'doc/a', before: B3, after: A1, by: revertBy }];

function evidence(rows: LogRow[]): HistoryEvidence {
  return { logs: new Map([['s', { from: 0, rows }]]), reads: new Map() };
}

function attempt(operation: HistoryOperation, rows: LogRow[] | undefined, conflicts: string[] = []): OperationAttempt {
  if (rows === undefined) return { operation, via: 'operator', outcome: 'failed', detail: 'killed' };
  return {
    operation,
    via: 'server',
    outcome: 'done',
    answer: {
      version: rows[0]?.version,
      changes: rows.map(({ key, before, after }) => ({ key, ...(before !== undefined && { before }), ...(after !== undefined && { after }) })),
      conflicts: conflicts.map((key) => ({ key, version: 2, later: [] })),
    },
  };
}

const judge = (record: Partial<HistoryRecord>, rows: LogRow[], reads?: HistoryEvidence['reads']) =>
  judgeHistory({ attempts: [], edits: [], ...record }, { ...evidence(rows), ...(reads && { reads }) }).map(({ detail }) => detail);

describe('the chaos checker of restores and reverts', () => {
  it('passes a whole restore and a revert that skipped its conflict, answered or not', () => {
    expect(judge({ attempts: [attempt(restore, restored)] }, [...edits, ...restored])).toEqual([]);
    expect(judge({ attempts: [attempt(restore, undefined)] }, [...edits, ...restored])).toEqual([]);
    expect(judge({ attempts: [attempt(revert, reverted, ['doc/b'])] }, [...edits, ...reverted])).toEqual([]);
    expect(judge({ attempts: [attempt(revert, undefined)] }, [...edits, ...reverted])).toEqual([]);
  });

  it('reports a restore that changed a key outside its prefix', () => {
    const outside: LogRow[] = [...restored, { version: 5, seq: 2, key: 'count/c1', before: 7, after: 3, by: restoreBy }];
    expect(judge({ attempts: [attempt(restore, outside)] }, [...edits, ...outside])).toEqual([
      expect.stringContaining('changed 1 keys outside its prefix "doc/"'),
    ]);
  });

  it('reports a restore applied in part, answered or not, and one whose answer its version does not hold', () => {
    const half = restored.slice(0, 1);
    expect(judge({ attempts: [attempt(restore, undefined)] }, [...edits, ...half])).toEqual([
      expect.stringContaining('"doc/" is not as it was at 1: "doc/b" is {"user":"alice","n":4}, and was absent (a restore applied in part?)'),
    ]);
    expect(judge({ attempts: [attempt(restore, restored)] }, [...edits, ...half])).toEqual([
      expect.stringContaining('answered 2 changes, and its version holds 1'),
      expect.stringContaining('applied in part'),
    ]);
  });

  it('reports a restore applied twice, and a version mixing a restore with other writes', () => {
    expect(judge({ attempts: [attempt(restore, undefined)] }, [...edits, ...restored, { ...restored[0]!, version: 6, before: A1, after: B3 }])).toEqual([
      expect.stringContaining('is not one any attempt that failed could have made'),
    ]);
    expect(judge({ attempts: [attempt(restore, undefined)] }, [...edits, ...restored, edit(5, 'alice', 'doc/c', undefined, { user: 'alice', n: 9 })])).toEqual([
      expect.stringContaining('version 5 mixes a restore'),
    ]);
  });

  it('reports a revert that left a value its cause wrote, or changed a key its cause never wrote', () => {
    // Half reverted: the conflict doc/b overwritten, doc/a still holding bob's value, and no conflict.
    const none: LogRow[] = [{ version: 5, seq: 0, key: 'doc/b', before: A4, by: revertBy }];
    expect(judge({ attempts: [attempt({ ...revert, onConflict: 'overwrite' }, none, ['doc/b'])] }, [...edits, ...none])).toEqual([
      expect.stringContaining('left "doc/a" at {"user":"bob","n":3}, not its value before'),
      expect.stringContaining('"doc/a" still holds {"user":"bob","n":3}, which its cause wrote'),
    ]);
    // doc/b overwritten under skip: alice's later value did not stand.
    const clobbered: LogRow[] = [...reverted, { version: 5, seq: 1, key: 'doc/b', before: A4, by: revertBy }];
    expect(judge({ attempts: [attempt(revert, clobbered, ['doc/b'])] }, [...edits, ...clobbered])).toEqual([
      expect.stringContaining('left the conflict "doc/b" at undefined, which its policy (skip) does not make'),
    ]);
    const stranger: LogRow[] = [...reverted, { version: 5, seq: 1, key: 'doc/z', after: 1, by: revertBy }];
    expect(judge({ attempts: [attempt(revert, stranger, ['doc/b'])] }, [...edits, ...stranger])).toEqual([
      expect.stringContaining('changed "doc/z", which its cause never changed'),
    ]);
  });

  it('reports conflicts not as the log shows them, and a stop that went ahead', () => {
    expect(judge({ attempts: [attempt(revert, reverted)] }, [...edits, ...reverted])).toEqual([
      expect.stringContaining('reported the conflicts [], and the log shows ["doc/b"]'),
    ]);
    expect(judge({ attempts: [attempt({ ...revert, onConflict: 'stop' }, reverted, ['doc/b'])] }, [...edits, ...reverted])).toEqual([
      expect.stringContaining('its policy is stop, and it met 1 conflicts'),
    ]);
  });

  it('reports data at the end other than the log replayed', () => {
    const live = (entries: Array<[string, JSONValue]>) => new Map([['s', new Map<string, JSONValue>([['count/c', 1], ...entries])]]);
    expect(
      judgeHistory(
        { attempts: [], edits: [] },
        {
          ...evidence(edits),
          live: live([
            ['doc/a', B3],
            ['doc/b', A4],
          ]),
        },
      ),
    ).toEqual([]);
    expect(judgeHistory({ attempts: [], edits: [] }, { ...evidence(edits), live: live([['doc/a', B3]]) }).map(({ detail }) => detail)).toEqual([
      's: its data at the end differs from its log replayed: "doc/b" is undefined, not {"user":"alice","n":4}',
    ]);
  });

  it('reports a server reading as of a version other than the log replayed, and an acknowledged edit lost', () => {
    const wanted = readsWanted(evidence([...edits, ...restored]).logs).map(({ version, prefix }) => `${version} ${prefix}`);
    expect(wanted).toEqual(['5 doc/', '1 doc/']);
    const reads = new Map([
      [readKey('s', 5, 'doc/'), [['doc/a', A1]] as Array<[string, JSONValue]>],
      [readKey('s', 1, 'doc/'), [['doc/a', B3]] as Array<[string, JSONValue]>],
    ]);
    expect(judge({ attempts: [attempt(restore, restored)] }, [...edits, ...restored], reads)).toEqual([
      expect.stringContaining('a server\'s at(1, "doc/") differs from the log replayed: "doc/a" is {"user":"bob","n":3}, not {"user":"alice","n":1}'),
    ]);
    expect(
      judge(
        {
          edits: [
            { space: 's', user: 'bob', n: 2, key: 'doc/b', del: false, acknowledged: true },
            { space: 's', user: 'bob', n: 8, key: 'doc/b', del: false, acknowledged: true },
          ],
        },
        edits,
      ),
    ).toEqual(['1 acknowledged edits are not in their space\'s log, the first {"space":"s","user":"bob","n":8,"key":"doc/b","del":false,"acknowledged":true}']);
  });
});
