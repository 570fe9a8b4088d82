import { expect } from 'vitest';
import {
  type JSONValue,
  type Mutators,
  type SyncContext,
  type SyncOptions,
  handlePull,
  handlePush,
  memoryStorage,
  TemporaryError,
  type Storage,
  createContext,
} from '../../src/index.js';
import type { PatchOperation } from '../../src/protocol.js';
import type { StorageTransaction, TransactionOptions } from '../../src/store.js';

/** Mutators the tests share: the real client fixtures use put, del and increment. */
export const testMutators: Mutators = {
  put: async (tx, { key, value }: { key: string; value: JSONValue }) => {
    await tx.set(key, value);
  },
  del: async (tx, { key }: { key: string }) => {
    await tx.del(key);
  },
  increment: async (tx, { key, delta }: { key: string; delta: number }) => {
    const current = (await tx.get(key)) as number | undefined;
    await tx.set(key, (current ?? 0) + delta);
  },
  /** Writes, then throws a permanent error: none of its writes may survive. */
  putThenFail: async (tx, { key, value }: { key: string; value: JSONValue }) => {
    await tx.set(key, value);
    throw new Error('permanent failure after a write');
  },
  /** Writes, then throws a temporary error. */
  putThenTemporary: async (tx, { key, value }: { key: string; value: JSONValue }) => {
    await tx.set(key, value);
    throw new TemporaryError('try again later', { retryAfterSeconds: 7 });
  },
};

/** A context on a fresh memory store with the test mutators and a silent `onError`. */
export function testContext(overrides: Partial<SyncOptions> = {}): SyncContext & { errors: unknown[] } {
  const errors: unknown[] = [];
  return Object.assign(createContext({ storage: memoryStorage(), mutators: testMutators, onError: (error) => errors.push(error), ...overrides }), { errors });
}

/** A POST with a JSON body, as the real client sends it. */
export function post(path: string, body: unknown, headers: Record<string, string> = {}): Request {
  return new Request(`http://localhost${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: '', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

let counter = 0;

/** A mutation of `clientID` numbered `id`. */
export function mutation(clientID: string, id: number, name: string, args?: JSONValue) {
  return { clientID, id, name, args, timestamp: ++counter };
}

/** A push body for `clientGroupID`. */
export function pushBody(clientGroupID: string, mutations: ReturnType<typeof mutation>[], extra: Record<string, unknown> = {}) {
  return { pushVersion: 1, clientGroupID, mutations, profileID: 'p1', schemaVersion: '', ...extra };
}

/** A version 1 pull body. */
export function pullBody(clientGroupID: string, cookie: JSONValue, extra: Record<string, unknown> = {}) {
  return { pullVersion: 1, clientGroupID, cookie, profileID: 'p1', schemaVersion: '', ...extra };
}

/** A version 0 pull body. */
export function pullBodyV0(clientID: string, cookie: JSONValue, lastMutationID: number, extra: Record<string, unknown> = {}) {
  return { pullVersion: 0, clientID, cookie, lastMutationID, profileID: 'p1', schemaVersion: '', ...extra };
}

/** Pushes and expects status 200. */
export async function push(ctx: SyncContext, clientGroupID: string, mutations: ReturnType<typeof mutation>[], headers?: Record<string, string>) {
  const response = await handlePush(post('/push', pushBody(clientGroupID, mutations), headers), ctx);
  expect(response.status, await response.clone().text()).toBe(200);
  return response;
}

export interface PullOK {
  cookie: JSONValue;
  lastMutationIDChanges: Record<string, number>;
  patch: PatchOperation[];
}

/** Pulls (version 1) and returns the body of a 200 response. */
export async function pull(ctx: SyncContext, clientGroupID: string, cookie: JSONValue, headers?: Record<string, string>): Promise<PullOK> {
  const response = await handlePull(post('/pull', pullBody(clientGroupID, cookie), headers), ctx);
  const text = await response.text();
  expect(response.status, text).toBe(200);
  return JSON.parse(text) as PullOK;
}

/** Applies a patch to a client view, as the client does (`sync/version/patch.ts`). */
export function applyPatch(view: ReadonlyMap<string, JSONValue>, patch: readonly PatchOperation[]): Map<string, JSONValue> {
  const next = new Map(view);
  for (const op of patch) {
    if (op.op === 'clear') next.clear();
    else if (op.op === 'put') next.set(op.key, op.value);
    else next.delete(op.key);
  }
  return next;
}

/** The whole server view of a space, read by a full pull. */
export async function serverView(ctx: SyncContext, headers?: Record<string, string>): Promise<Map<string, JSONValue>> {
  const { patch } = await pull(ctx, 'view-reader', null, headers);
  return applyPatch(new Map(), patch);
}

/**
 * The version a cookie stands for, given the cookie of version 1 of the same space: orders are
 * the space's version plus a base taken from its creation time (src/sync/version/cookie.ts).
 */
export function versionOf(cookie: JSONValue, versionOne: JSONValue): number {
  const order = (cookie as { order: number }).order;
  return order === 0 ? 0 : order - (versionOne as { order: number }).order + 1;
}

/** Pushes `put hello=world` to the server at `base` over HTTP and pulls it back. */
export async function pushAndPull(base: URL, query = ''): Promise<void> {
  const send = (path: string, body: unknown) =>
    fetch(new URL(path + query, base), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const pushed = await send('push', pushBody('g', [mutation('c', 1, 'put', { key: 'hello', value: 'world' })]));
  expect(pushed.status, await pushed.clone().text()).toBe(200);
  const pulled = await (await send('pull', pullBody('g', null))).json();
  expect(pulled).toMatchObject({ lastMutationIDChanges: { c: 1 }, patch: [{ op: 'clear' }, { op: 'put', key: 'hello', value: 'world' }] });
}

/** A memory store that counts the entries it reads (each `get`, each row a `scan` returns), to check what a pull costs. */
export function countingStorage(reads: { count: number }): Storage {
  const inner = memoryStorage();
  return {
    transaction<T>(fn: (tx: StorageTransaction) => Promise<T>, options: TransactionOptions) {
      return inner.transaction(
        (tx) =>
          fn({
            get: (key) => (reads.count++, tx.get(key)),
            put: (key, value) => tx.put(key, value),
            del: (key) => tx.del(key),
            scan: async (o) => {
              const rows = await tx.scan(o);
              reads.count += rows.length;
              return rows;
            },
          }),
        options,
      );
    },
  };
}
