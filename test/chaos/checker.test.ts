/**
 * The chaos suite's checker on histories made by hand: a clean one passes, and each anomaly it
 * exists to catch is caught. (The suite itself, test/chaos/chaos.e2e.test.ts, shows it catches them
 * in real runs too, with a fix reverted: see docs/fault-injection.md.)
 */
import { describe, expect, it } from 'vitest';
import type { JSONValue } from '../../src/index.js';
import { type Anomaly, check, compareCookies } from './checker.js';
import type { Exchange, History } from './history.js';

let clock = 0;

function push(group: string, mutations: Array<[client: string, id: number]>, status: Exchange['status'] = 200, answer: unknown = {}): Exchange {
  const start = ++clock;
  return {
    group,
    space: 's',
    kind: 'push',
    start,
    end: ++clock,
    body: { pushVersion: 1, clientGroupID: group, mutations: mutations.map(([clientID, id]) => ({ clientID, id, name: 'inc', args: null })) },
    status,
    answer,
  };
}

function pull(group: string, cookie: JSONValue, answer: unknown, status: Exchange['status'] = 200): Exchange {
  const start = ++clock;
  return { group, space: 's', kind: 'pull', start, end: ++clock, body: { pullVersion: 1, clientGroupID: group, cookie }, status, answer };
}

/** The data of a client that applied mutations 1..n once each. */
function applied(client: string, n: number): Array<[string, JSONValue]> {
  return [[`count/${client}`, n], ...Array.from({ length: n }, (_, i): [string, JSONValue] => [`m/${client}/${i + 1}`, 1])];
}

function history(exchanges: Exchange[], data: Array<[string, JSONValue]>, extra: Partial<History> = {}): History {
  const truth = new Map([['s', new Map(data)]]);
  return {
    exchanges,
    backend: [],
    imports: [],
    faults: [],
    crashes: [],
    runnerErrors: [],
    operatorCommands: [],
    unavailable: [],
    settled: [{ group: 'g', space: 's', view: new Map(data) }],
    truth,
    ...extra,
  };
}

const kinds = (anomalies: Anomaly[]) => anomalies.map(({ kind }) => kind);

describe('the chaos checker', () => {
  const clean = () => [
    push('g', [
      ['c', 1],
      ['c', 2],
    ]),
    pull('g', null, { cookie: { order: 5 }, lastMutationIDChanges: { c: 2 }, patch: [] }),
    push('g', [['c', 3]], 503, 'busy'),
    push('g', [['c', 3]], 'network', 'cut'),
    pull('g', { order: 5 }, { cookie: { order: 5 }, lastMutationIDChanges: {}, patch: [] }),
  ];

  it('passes a clean history, counting the acknowledged mutations it checked', () => {
    const verdict = check(history(clean(), applied('c', 2)));
    expect(verdict.anomalies).toEqual([]);
    expect(verdict.mutationsChecked).toBe(2);
  });

  it('an acknowledged mutation missing from the data', () => {
    expect(kinds(check(history(clean(), applied('c', 1))).anomalies)).toContain('acknowledged-lost');
  });

  it('a mutation applied twice: its counter above its records', () => {
    expect(kinds(check(history(clean(), [...applied('c', 2), ['count/c', 3]])).anomalies)).toEqual(['applied-twice']);
  });

  it('a later mutation applied without an earlier one', () => {
    expect(
      kinds(
        check(
          history(
            [],
            [
              ['count/c', 1],
              ['m/c/2', 1],
            ],
          ),
        ).anomalies,
      ),
    ).toEqual(['out-of-order']);
  });

  it('a cookie that goes backwards, and changes sent under the cookie the client already has', () => {
    const backwards = [pull('g', { order: 5 }, { cookie: { order: 4 }, lastMutationIDChanges: {}, patch: [] })];
    expect(kinds(check(history(backwards, [])).anomalies)).toEqual(['cookie-backwards']);
    const same = [pull('g', { order: 5 }, { cookie: { order: 5 }, lastMutationIDChanges: {}, patch: [{ op: 'del', key: 'x' }] })];
    expect(kinds(check(history(same, [])).anomalies)).toEqual(['changes-under-same-cookie']);
  });

  it('a client instance opened again from what it stored starts from its own older cookie: judged by what it was told, not the instance before it', () => {
    const first = { ...pull('g', null, { cookie: { order: 7 }, lastMutationIDChanges: { c: 2 }, patch: [] }), instance: 'one' };
    const reopened = { ...pull('g', { order: 5 }, { cookie: { order: 6 }, lastMutationIDChanges: {}, patch: [] }), instance: 'two' };
    expect(check(history([first, reopened], applied('c', 2))).anomalies).toEqual([]);
    const same = { ...reopened, instance: 'one' };
    expect(kinds(check(history([first, same], applied('c', 2))).anomalies)).toEqual(['cookie-backwards']);
  });

  it("a client's lastMutationID that goes backwards", () => {
    const exchanges = [
      pull('g', null, { cookie: { order: 5 }, lastMutationIDChanges: { c: 2 }, patch: [] }),
      pull('g', { order: 5 }, { cookie: { order: 6 }, lastMutationIDChanges: { c: 1 }, patch: [] }),
    ];
    expect(kinds(check(history(exchanges, applied('c', 2))).anomalies)).toEqual(['lmid-backwards']);
  });

  it('a pull after a push was answered 200 that does not reflect it', () => {
    const exchanges = [push('g', [['c', 1]]), pull('g', null, { cookie: { order: 5 }, lastMutationIDChanges: {}, patch: [] })];
    expect(kinds(check(history(exchanges, applied('c', 1))).anomalies)).toEqual(['push-not-reflected']);
  });

  it('where loss is admitted, a push lost to a failover between its answer and the next pull is counted, not an anomaly; outside the failover, or where loss is not admitted, it is one', () => {
    // The client sees its lastMutationID short of the push and pushes the mutation again: it is
    // applied in the end (the data holds it once), as the real client does after a failover.
    const answered = push('g', [['c', 1]]);
    const failover = { kind: 'crash the primary, promote the standby', from: answered.end + 0.5, to: answered.end + 0.6, losesCommits: true };
    const after = pull('g', null, { cookie: { order: 5 }, lastMutationIDChanges: {}, patch: [] });
    const again = [push('g', [['c', 1]]), pull('g', { order: 5 }, { cookie: { order: 6 }, lastMutationIDChanges: { c: 1 }, patch: [] })];
    const exchanges = [answered, after, ...again];
    expect(check(history(exchanges, applied('c', 1), { faults: [failover] }), { lossAllowed: true })).toMatchObject({ anomalies: [], pushesLost: 1 });
    expect(kinds(check(history(exchanges, applied('c', 1), { faults: [failover] })).anomalies)).toEqual(['push-not-reflected']);
    const elsewhere = { ...failover, from: after.end + 10, to: after.end + 20 };
    expect(kinds(check(history(exchanges, applied('c', 1), { faults: [elsewhere] }), { lossAllowed: true }).anomalies)).toEqual(['push-not-reflected']);
    const harmless = { ...failover, losesCommits: false };
    expect(kinds(check(history(exchanges, applied('c', 1), { faults: [harmless] }), { lossAllowed: true }).anomalies)).toEqual(['push-not-reflected']);
    // Lost and never pushed again, with no ClientStateNotFound, in a group the store still
    // knows (another client's mutation survived): the end still catches it.
    const kept = push('g', [['d', 1]]);
    const lost = push('g', [['c', 1]]);
    const window = { ...failover, from: lost.end + 0.5, to: lost.end + 0.6 };
    const then = pull('g', null, { cookie: { order: 5 }, lastMutationIDChanges: { d: 1 }, patch: [] });
    expect(kinds(check(history([kept, lost, then], applied('d', 1), { faults: [window] }), { lossAllowed: true }).anomalies)).toEqual(['acknowledged-lost']);
  });

  it('a 500, and a refusal of a well-formed request', () => {
    expect(kinds(check(history([push('g', [['c', 1]], 500, 'oops')], [])).anomalies)).toEqual(['server-error']);
    expect(kinds(check(history([push('g', [['c', 1]], 400, 'bad')], [])).anomalies)).toEqual(['refused']);
  });

  it('a client group that does not hold the data at the end', () => {
    const verdict = check(history(clean(), applied('c', 2), { settled: [{ group: 'g', space: 's', view: new Map(applied('c', 1)) }] }));
    expect(kinds(verdict.anomalies)).toEqual(['diverged']);
  });

  it('a process that ended by itself, an operator command that should have been refused, and a failure of the runner', () => {
    const verdict = check(
      history([], [], { crashes: ['server 0 ended by itself'], operatorCommands: ['viewsync move never-written --to b exited 0'], runnerErrors: ['boom'] }),
    );
    expect(kinds(verdict.anomalies)).toEqual(['process-died', 'operator-command-accepted', 'runner-error']);
  });

  it('backend writes: one acknowledged and missing, and one applied twice', () => {
    const backend = [
      { space: 'b', n: 1, acknowledged: true },
      { space: 'b', n: 2, acknowledged: true },
    ];
    const truth = new Map([
      ['s', new Map()],
      [
        'b',
        new Map<string, JSONValue>([
          ['backend/1', 1],
          ['backend/count', 2],
        ]),
      ],
    ]);
    expect(kinds(check(history([], [], { backend, truth })).anomalies)).toEqual(['backend-applied-twice', 'backend-lost']);
  });

  it('imports: a dump cut short that was imported, and a space that is not its last whole import', () => {
    const entries = { a: 1 };
    const cut = { space: 'i', cut: true, outcome: 'imported' as const, entries, end: 1 };
    const truth = new Map([
      ['s', new Map()],
      ['i', new Map<string, JSONValue>([['a', 1]])],
    ]);
    expect(kinds(check(history([], [], { imports: [cut], truth })).anomalies)).toEqual(['cut-import-accepted', 'import-wrong']);
    const whole = { space: 'i', cut: false, outcome: 'imported' as const, entries, end: 2 };
    expect(check(history([], [], { imports: [whole], truth })).anomalies).toEqual([]);
    // A whole import told its staging area was taken (StagingLostError) applied nothing: the
    // space is still the last import's, and one it emptied is caught (the bug the suite found).
    const abandoned = { space: 'i', cut: false, outcome: 'abandoned' as const, entries, end: 3 };
    expect(check(history([], [], { imports: [whole, abandoned], truth })).anomalies).toEqual([]);
    const emptied = new Map([
      ['s', new Map()],
      ['i', new Map<string, JSONValue>()],
    ]);
    expect(kinds(check(history([], [], { imports: [whole, abandoned], truth: emptied })).anomalies)).toEqual(['import-wrong']);
  });

  it('imports where a failover may lose acknowledged commits: an earlier whole import, or none, but never a mix', () => {
    const first = { space: 'i', cut: false, outcome: 'imported' as const, entries: { a: 1, n: 1 }, end: 1 };
    const second = { space: 'i', cut: false, outcome: 'imported' as const, entries: { a: 1, n: 2 }, end: 2 };
    const holding = (data: Array<[string, JSONValue]>) =>
      new Map([
        ['s', new Map()],
        ['i', new Map<string, JSONValue>(data)],
      ]);
    const earlier = holding([
      ['a', 1],
      ['n', 1],
    ]);
    expect(kinds(check(history([], [], { imports: [first, second], truth: earlier })).anomalies)).toEqual(['import-wrong']);
    expect(check(history([], [], { imports: [first, second], truth: earlier }), { lossAllowed: true }).anomalies).toEqual([]);
    expect(check(history([], [], { imports: [first, second], truth: holding([]) }), { lossAllowed: true }).anomalies).toEqual([]);
    expect(kinds(check(history([], [], { imports: [first, second], truth: holding([['n', 2]]) }), { lossAllowed: true }).anomalies)).toEqual(['import-wrong']);
  });

  it('a group that could not settle is reported as such, not as diverged', () => {
    const stale = { group: 'g', space: 's', view: new Map<string, JSONValue>(applied('c', 1)) };
    const truth = new Map([['s', new Map<string, JSONValue>(applied('c', 2))]]);
    expect(kinds(check(history([], [], { settled: [stale], truth })).anomalies)).toEqual(['diverged']);
    expect(kinds(check(history([], [], { settled: [{ ...stale, unsettled: 'pull 503 (30.0 s)' }], truth })).anomalies)).toEqual(['not-settled']);
  });

  it('where loss is admitted, a lost mutation passes only if its group was told ClientStateNotFound', () => {
    const told = [...clean(), pull('g', { order: 5 }, { error: 'ClientStateNotFound' })];
    expect(check(history(told, applied('c', 1)), { lossAllowed: true })).toMatchObject({ anomalies: [], admittedLosses: 1 });
    expect(kinds(check(history(clean(), applied('c', 1)), { lossAllowed: true }).anomalies)).toEqual(['acknowledged-lost']);
  });

  it('where loss is admitted, a group lost whole passes untold (the store takes it for a forked group); elsewhere it is an anomaly', () => {
    const whole = [push('g', [['c', 1]]), pull('g', null, { cookie: { order: 5 }, lastMutationIDChanges: { c: 1 }, patch: [] })];
    expect(check(history(whole, []), { lossAllowed: true })).toMatchObject({ anomalies: [], admittedLosses: 1 });
    expect(kinds(check(history(whole, [])).anomalies)).toEqual(['acknowledged-lost']);
  });

  it('a group reset though it pulled a moment before (as a restore must never make it); one whose last pull was long ago may be, as may its first', () => {
    const reset = { cookie: { order: 9 }, lastMutationIDChanges: {}, patch: [{ op: 'clear' }, { op: 'put', key: 'doc/a', value: 1 }] };
    const first = pull('g', null, { ...reset, cookie: { order: 5 } });
    expect(kinds(check(history([first, pull('g', { order: 5 }, reset)], [])).anomalies)).toEqual(['reset']);
    const earlier = pull('g', null, { ...reset, cookie: { order: 5 } });
    clock += 10_000;
    expect(kinds(check(history([earlier, pull('g', { order: 5 }, reset)], [])).anomalies)).toEqual([]);
    expect(
      kinds(check(history([pull('g', null, { ...reset, cookie: { order: 5 } }), pull('g', { order: 5 }, reset)], []), { lossAllowed: true }).anomalies),
    ).toEqual([]);
  });

  it('orders cookies as the real client does: null lowest, objects by order, strings as strings', () => {
    expect(compareCookies(null, { order: 0 })).toBeLessThan(0);
    expect(compareCookies({ order: 9 }, { order: 10 })).toBeLessThan(0);
    expect(compareCookies('10', '9')).toBeLessThan(0);
    expect(compareCookies({ order: 3 }, { order: 3 })).toBe(0);
  });
});
