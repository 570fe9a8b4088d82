/**
 * History against a model: random runs of sets and deletes (pushes by three users), restores,
 * reverts, erasures and housekeeping (which writes checkpoints every few versions here), checked
 * against a plain model of what each version held, who wrote each value, and what an erasure
 * took. After every step: the space as of every version equals the model's (whichever base the
 * read starts from: the live data or a checkpoint); a restore then a read now equals the read at
 * the restored version; a revert changes exactly the model's keys and reports exactly its
 * conflicts, under each policy; and after an erasure no read path (a pull from scratch, an
 * export, the feed, history, a read as of any version) holds an erased value anywhere.
 * More cases by hand: `FC_RUNS=2000 npx vitest run test/history/model.test.ts`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JSONValue } from '../../src/index.js';
import { at, type ConflictPolicy, eraseData, readChanges, readHistory, restoreSpace, revertChanges, type RevertCause } from '../../src/backend.js';
import { collectGarbage, exportSpace } from '../../src/ops.js';
import { mutation, pull, push, testContext } from '../support/helpers.js';

const RUNS = Math.max(Number(process.env.FC_RUNS ?? 0), 300);
const KEYS = ['a/1', 'a/2', 'b/1', 'b/2', 'c'];
const USERS = ['u1', 'u2', 'u3'];

type Op =
  | { kind: 'set'; key: string; user: string }
  | { kind: 'del'; key: string; user: string }
  | { kind: 'restore'; back: number; prefix: string }
  | { kind: 'revert'; user: string | undefined; window: [number, number] | undefined; policy: ConflictPolicy }
  | { kind: 'erase'; target: { key: string } | { prefix: string } | { userID: string } }
  | { kind: 'housekeeping' };

/** A fraction of the versions so far, spread evenly (fc.double favours 0 and 1). */
const fraction = fc.integer({ min: 0, max: 100 }).map((n) => n / 100);

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('set' as const), key: fc.constantFrom(...KEYS), user: fc.constantFrom(...USERS) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('del' as const), key: fc.constantFrom(...KEYS), user: fc.constantFrom(...USERS) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restore' as const), back: fraction, prefix: fc.constantFrom('', 'a/', 'b/2') }) },
  {
    weight: 2,
    arbitrary: fc
      .record({
        kind: fc.constant('revert' as const),
        user: fc.option(fc.constantFrom(...USERS), { nil: undefined }),
        window: fc.option(fc.tuple(fraction, fraction), { nil: undefined }),
        policy: fc.constantFrom<ConflictPolicy>('skip', 'overwrite', 'stop'),
      })
      .filter((revert) => revert.user !== undefined || revert.window !== undefined)
      .map((revert) => ({ ...revert, window: revert.window && ([Math.min(...revert.window), Math.max(...revert.window)] as [number, number]) })),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('erase' as const),
      target: fc.oneof(
        fc.record({ key: fc.constantFrom(...KEYS) }),
        fc.record({ prefix: fc.constantFrom('a/', 'b/') }),
        fc.record({ userID: fc.constantFrom(...USERS) }),
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'housekeeping' as const }) },
);

/** A change as the model keeps it: values are unique strings, so a value tells its write. */
interface ModelChange {
  version: number;
  key: string;
  before: string | undefined;
  after: string | undefined;
  user: string | null;
}

/** What the space held, version by version, and what history must no longer hold. */
class Model {
  /** `states[v]`: the space at version v. */
  readonly states: Array<Map<string, string>> = [new Map()];
  readonly changes: ModelChange[] = [];
  /** Who wrote each value (a value restored or reverted back is still its writer's). */
  readonly authors = new Map<string, string>();
  /** Each key's values, ever. */
  readonly valuesAt = new Map<string, Set<string>>();
  readonly erased = new Set<string>();

  get now(): Map<string, string> {
    return this.states.at(-1)!;
  }

  get version(): number {
    return this.states.length - 1;
  }

  /** The space at version `v` as history tells it: erased values absent. */
  seen(v: number): Map<string, string> {
    return new Map([...this.states[v]!].filter(([, value]) => !this.erased.has(value)));
  }

  /** Commits `next` as a new version, its changes made by `user` (null: a restore, revert or erasure). */
  commit(next: Map<string, string>, user: string | null): void {
    const version = this.version + 1;
    for (const key of new Set([...this.now.keys(), ...next.keys()])) {
      const before = this.now.get(key);
      const after = next.get(key);
      if (before === after) continue;
      this.changes.push({ version, key, before, after, user });
      if (after !== undefined) this.valuesAt.set(key, (this.valuesAt.get(key) ?? new Set()).add(after));
    }
    this.states.push(next);
  }
}

let counter = 0;

describe('history against a model', () => {
  it('reads as of every version, restores, reverts and erases as the model says, and no read path keeps an erased value', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 24 }), async (ops) => {
        const ctx = testContext({ changes: {}, history: { checkpointEvery: 2 }, authenticate: (request) => request.headers.get('x-user') });
        const model = new Model();
        const mutationIDs = new Map<string, number>();
        const pushAs = async (user: string, name: string, args: JSONValue) => {
          const id = (mutationIDs.get(user) ?? 0) + 1;
          mutationIDs.set(user, id);
          await push(ctx, `g-${user}`, [mutation(`c-${user}`, id, name, args)], { 'x-user': user });
        };
        for (const step of ops) {
          if (step.kind === 'set') {
            const value = `v${++counter}`;
            await pushAs(step.user, 'put', { key: step.key, value });
            model.authors.set(value, step.user);
            model.commit(new Map(model.now).set(step.key, value), step.user);
          } else if (step.kind === 'del') {
            await pushAs(step.user, 'del', { key: step.key });
            const next = new Map(model.now);
            next.delete(step.key);
            // A push moves the version even when its mutation changed nothing (its client's record).
            model.commit(next, step.user);
          } else if (step.kind === 'restore') {
            const to = Math.floor(step.back * model.version);
            const result = await restoreSpace(ctx, '', { to, prefix: step.prefix });
            const next = new Map([...model.now].filter(([key]) => !key.startsWith(step.prefix)));
            for (const [key, value] of model.seen(to)) if (key.startsWith(step.prefix)) next.set(key, value);
            const changed = [...new Set([...next.keys(), ...model.now.keys()])].filter((key) => next.get(key) !== model.now.get(key));
            expect(result.changes.map(({ key }) => key).sort()).toEqual(changed.sort());
            expect(result.version).toBe(changed.length > 0 ? model.version + 1 : undefined);
            if (changed.length > 0) model.commit(next, null);
            // A restore then a read now equals the read at the restored version.
            const now = await at(ctx, '', model.version, { prefix: step.prefix });
            expect(now.entries).toEqual((await at(ctx, '', to, { prefix: step.prefix })).entries);
          } else if (step.kind === 'revert') {
            const cause: RevertCause = {
              ...(step.user !== undefined && { userID: step.user }),
              ...(step.window !== undefined && {
                versions: [Math.floor(step.window[0] * model.version) + 1, Math.max(1, Math.floor(step.window[1] * model.version))] as [number, number],
              }),
            };
            if (cause.versions !== undefined && cause.versions[0] > cause.versions[1]) cause.versions = [cause.versions[1], cause.versions[1]];
            const expected = modelRevert(model, cause, step.policy);
            const result = await revertChanges(ctx, '', cause, { onConflict: step.policy });
            expect(result.stopped).toBe(expected.stopped);
            expect(result.changes).toEqual(expected.changes);
            expect(
              result.conflicts.map(({ key, version, later, erased, current, revertTo }) => ({
                key,
                version,
                later: later.map((change) => change.version),
                erased: erased === true,
                current,
                revertTo,
              })),
            ).toEqual(expected.conflicts);
            if (expected.changes.length > 0) {
              const next = new Map(model.now);
              for (const { key, after } of expected.changes) after === undefined ? next.delete(key) : next.set(key, after as string);
              model.commit(next, null);
            }
            expect(result.version).toBe(expected.changes.length > 0 ? model.version : undefined);
          } else if (step.kind === 'erase') {
            const { target } = step;
            const gone =
              'userID' in target
                ? [...model.authors].filter(([, user]) => user === target.userID).map(([value]) => value)
                : [...model.valuesAt]
                    .filter(([key]) => ('key' in target ? key === target.key : key.startsWith(target.prefix)))
                    .flatMap(([, values]) => [...values]);
            for (const value of gone) model.erased.add(value);
            const result = await eraseData(ctx, '', target);
            const next = new Map([...model.now].filter(([, value]) => !model.erased.has(value)));
            expect(result.deleted.sort()).toEqual([...model.now.keys()].filter((key) => !next.has(key)).sort());
            // The erasure's commit: its deletes and its event, always a version (the log is kept).
            model.commit(next, null);
            expect(result.version).toBe(model.version);
          } else {
            await collectGarbage(ctx, '');
          }
          for (let v = 0; v <= model.version; v++) expect(new Map((await at(ctx, '', v)).entries), `as of version ${v}`).toEqual(model.seen(v));
        }
        if (model.erased.size > 0) await expectNowhere(ctx, model);
      }),
      { numRuns: RUNS },
    );
  });
});

/** The model's revert: each key the cause changed goes back to its value before the cause's first change, conflicts where another's change came later or that value was erased. */
function modelRevert(model: Model, cause: RevertCause, policy: ConflictPolicy) {
  const selected = (change: ModelChange) =>
    (cause.userID === undefined || change.user === cause.userID) &&
    (cause.versions === undefined || (change.version >= cause.versions[0] && change.version <= cause.versions[1]));
  const touched = new Map<string, { first: ModelChange; later: ModelChange[] }>();
  for (const change of model.changes) {
    const seen = touched.get(change.key);
    if (selected(change)) {
      if (seen === undefined) touched.set(change.key, { first: change, later: [] });
    } else if (seen !== undefined) seen.later.push(change);
  }
  const changes: Array<{ key: string; before?: JSONValue; after?: JSONValue }> = [];
  const conflicts: Array<{ key: string; version: number; later: number[]; erased: boolean; current: string | undefined; revertTo: string | undefined }> = [];
  for (const key of [...touched.keys()].sort()) {
    const { first, later } = touched.get(key)!;
    const current = model.now.get(key);
    const erased = first.before !== undefined && model.erased.has(first.before);
    const change = { key, ...(current !== undefined && { before: current }), ...(first.before !== undefined && { after: first.before }) };
    if (!erased && later.length === 0) {
      if (current !== first.before) changes.push(change);
      continue;
    }
    if (!erased && current === first.before) continue;
    conflicts.push({ key, version: first.version, later: later.map((change) => change.version), erased, current, revertTo: erased ? undefined : first.before });
    if (!erased && policy === 'overwrite') changes.push(change);
  }
  return policy === 'stop' && conflicts.length > 0 ? { changes: [], conflicts, stopped: true } : { changes, conflicts, stopped: false };
}

/** No read path holds an erased value: a pull from scratch, an export, the feed, history, and a read as of every version. */
async function expectNowhere(ctx: Parameters<typeof at>[0], model: Model): Promise<void> {
  const texts: string[] = [];
  texts.push(JSON.stringify((await pull(ctx, `fresh-${++counter}`, null, { 'x-user': 'reader' })).patch));
  texts.push(await new Response(exportSpace(ctx, '')).text());
  texts.push(JSON.stringify((await readChanges(ctx, '', { limit: 10_000 })).changes));
  texts.push(JSON.stringify((await readHistory(ctx, '', { limit: 10_000 })).changes));
  for (let v = 0; v <= model.version; v++) texts.push(JSON.stringify((await at(ctx, '', v)).entries));
  const all = texts.join('\n');
  for (const value of model.erased) expect(all.includes(`"${value}"`), `erased value ${value} read back`).toBe(false);
}
