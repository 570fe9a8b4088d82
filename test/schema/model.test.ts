/**
 * A model of a deploy from schema version 1 to 2, checked against the server by random runs
 * (fast-check): version 1 and version 2 clients push and pull in random interleavings, some
 * offline for a while (their mutations pile up and go in one push, resent in full as the client
 * does), the server deploys version 2 (and migrates the data) at a random point and may close
 * version 1's window later. Whatever the interleaving, the server holds the result of applying
 * every mutation once, upgraded, in the order the server received them: nothing lost, nothing
 * doubled, every client's lastMutationID counting its mutations, and every successful pull
 * leaving its client holding that result in its own version's shape.
 * More cases by hand: `FC_RUNS=20000 npx vitest run test/schema/model.test.ts`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createContext, handlePull, handlePush, memoryStorage, type JSONValue, type Mutators, type SyncContext } from '../../src/index.js';
import { transact } from '../../src/backend.js';
import { applyPatch, post, pullBody, pushBody, type PullOK } from '../support/helpers.js';
import { migrateV1Entries, mutatorsV1, mutatorsV2, schemaV2 } from './app.js';

// Cheap (about a millisecond a run): never fewer than 4,000, which catch a dropped delete or a doubled bump every time here.
const RUNS = Math.max(Number(process.env.FC_RUNS ?? 0), 4_000);

/** A to-do as both versions hold it, in neither's shape. */
type Todo = { text: string; done: boolean; count: number };
type Op =
  | { kind: 'add'; id: string; text: string }
  | { kind: 'done'; id: string; done: boolean }
  | { kind: 'bump'; id: string }
  | { kind: 'remove'; id: string };

const ids = fc.constantFrom('a', 'b');
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), id: ids, text: fc.constantFrom('Milk', 'Eggs', 'Tea') }),
  fc.record({ kind: fc.constant('done' as const), id: ids, done: fc.boolean() }),
  fc.record({ kind: fc.constant('bump' as const), id: ids }),
  fc.record({ kind: fc.constant('remove' as const), id: ids }),
);
type Step = { do: 'mutate'; client: number; op: Op } | { do: 'push' | 'pull'; client: number } | { do: 'deploy' | 'close' };
const CLIENTS = 4;
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ do: fc.constant('mutate' as const), client: fc.nat(CLIENTS - 1), op }) },
  { weight: 5, arbitrary: fc.record({ do: fc.constant('push' as const), client: fc.nat(CLIENTS - 1) }) },
  { weight: 5, arbitrary: fc.record({ do: fc.constant('pull' as const), client: fc.nat(CLIENTS - 1) }) },
  { weight: 2, arbitrary: fc.record({ do: fc.constant('deploy' as const) }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant('close' as const) }) },
);

/** The mutation each version's client sends for `op`. */
function sent(version: '1' | '2', op: Op): { name: string; args: JSONValue } {
  switch (op.kind) {
    case 'add':
      return { name: 'addTodo', args: version === '1' ? { id: op.id, text: op.text } : { id: op.id, title: op.text } };
    case 'done':
      return { name: 'setDone', args: { id: op.id, done: op.done } };
    case 'bump':
      return { name: 'bump', args: version === '1' ? { id: op.id } : { id: op.id, by: 1 } };
    case 'remove':
      return { name: 'removeTodo', args: { id: op.id } };
  }
}

/** `op` applied to the model. */
function apply(todos: Map<string, Todo>, op: Op): void {
  const todo = todos.get(op.id);
  if (op.kind === 'add') todos.set(op.id, { text: op.text, done: false, count: 0 });
  else if (op.kind === 'remove') todos.delete(op.id);
  else if (todo !== undefined) todos.set(op.id, op.kind === 'done' ? { ...todo, done: op.done } : { ...todo, count: todo.count + 1 });
}

/** What a client of `version` holds of the model. */
function shaped(todos: Map<string, Todo>, version: '1' | '2'): Record<string, JSONValue> {
  const entries = [...todos].map(([id, { text, done, count }]) =>
    version === '1' ? [`todo/${id}`, { text, done, count }] : [`task/${id}`, { title: text, done, count }],
  );
  return Object.fromEntries(entries.sort(([a], [b]) => (a! < b! ? -1 : 1)));
}

interface Client {
  group: string;
  id: string;
  version: '1' | '2';
  /** Its mutations not yet confirmed by a pull: a push sends them all, as the real client does. */
  pending: Array<{ id: number; op: Op }>;
  next: number;
  cookie: JSONValue;
  view: Map<string, JSONValue>;
}

describe('a deploy from schema version 1 to 2, against a model', () => {
  it('any interleaving of version 1 and 2 clients, online and offline, applies every mutation once, upgraded, in order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 80 }), fc.boolean(), async (steps, perMutation) => {
        const storage = memoryStorage();
        const errors: unknown[] = [];
        const serve = (mutators: object, schema: typeof schemaV2) =>
          createContext({ storage, mutators: mutators as Mutators, schema, transactionPerMutation: perMutation, onError: (error) => errors.push(error) });
        let ctx: SyncContext = serve(mutatorsV1, { current: '1' });
        let stage: 'v1' | 'v2' | 'closed' = 'v1';
        const model = new Map<string, Todo>();
        const applied = new Map<string, number>();
        // Clients 0 and 1 are on version 1 from the start; 2 and 3 open on version 2 after the deploy.
        const clients: Client[] = Array.from({ length: CLIENTS }, (_, i) => ({
          group: `g${i}`,
          id: `c${i}`,
          version: i < 2 ? '1' : '2',
          pending: [],
          next: 1,
          cookie: null,
          view: new Map(),
        }));
        const usable = (client: Client) => client.version === '1' || stage !== 'v1';

        const push = async (client: Client) => {
          if (client.pending.length === 0) return;
          const mutations = client.pending.map(({ id, op }) => ({ clientID: client.id, id, timestamp: id, ...sent(client.version, op) }));
          const response = await handlePush(post('/push', pushBody(client.group, mutations, { schemaVersion: client.version })), ctx);
          expect(response.status).toBe(200);
          expect(await response.json()).toEqual({});
          // The model: those past what the server applied of this client, in order.
          for (const { id, op } of client.pending) {
            if (id <= (applied.get(client.id) ?? 0)) continue;
            apply(model, op);
            applied.set(client.id, id);
          }
        };
        const pull = async (client: Client) => {
          const response = await handlePull(post('/pull', pullBody(client.group, client.cookie, { schemaVersion: client.version })), ctx);
          expect(response.status).toBe(200);
          const answer = (await response.json()) as PullOK | { error: string; versionType: string };
          if ('error' in answer) {
            // Only a closed version's pull is refused, and so.
            expect([stage, client.version, answer]).toEqual(['closed', '1', { error: 'VersionNotSupported', versionType: 'schema' }]);
            return;
          }
          client.cookie = answer.cookie;
          client.view = applyPatch(client.view, answer.patch);
          const confirmed = answer.lastMutationIDChanges[client.id] ?? 0;
          client.pending = client.pending.filter(({ id }) => id > confirmed);
          expect(Object.fromEntries([...client.view].sort(([a], [b]) => (a < b ? -1 : 1)))).toEqual(shaped(model, client.version));
        };

        for (const next of steps) {
          if (next.do === 'deploy' && stage === 'v1') {
            ctx = serve(mutatorsV2, schemaV2);
            await transact(ctx, '', migrateV1Entries);
            stage = 'v2';
          } else if (next.do === 'close' && stage === 'v2') {
            ctx = serve(mutatorsV2, { ...schemaV2, minimum: '2' });
            stage = 'closed';
          } else if (next.do === 'mutate' && usable(clients[next.client]!)) {
            const client = clients[next.client]!;
            client.pending.push({ id: client.next++, op: next.op });
          } else if (next.do === 'push' && usable(clients[next.client]!)) await push(clients[next.client]!);
          else if (next.do === 'pull' && usable(clients[next.client]!)) await pull(clients[next.client]!);
        }
        // Every client comes back online in the end (an old one's through mutation recovery: a
        // push under its version, which a closed window still applies).
        for (const client of clients) if (usable(client)) await push(client);
        const reader: Client = { group: 'reader', id: 'r', version: stage === 'v1' ? '1' : '2', pending: [], next: 1, cookie: null, view: new Map() };
        await pull(reader);
        for (const client of clients) if (usable(client) && !(stage === 'closed' && client.version === '1')) await pull(client);
        // Every mutation counted once: each client's lastMutationID is its last mutation.
        for (const client of clients) if (client.next > 1 && usable(client)) expect(applied.get(client.id)).toBe(client.next - 1);
        // No failure anywhere: every upgrade and read of this app is total.
        expect(errors).toEqual([]);
      }),
      { numRuns: RUNS },
    );
  }, 120_000);
});
