/**
 * The app the inspector's tests (and scripts/inspector-dev.ts) look at: shared to-do lists in
 * spaces, a view that gives each user the lists they are a member of, the change feed with
 * history, one webhook, and an inspector. Users authenticate as `Bearer <user>`; the space is the
 * `space` query parameter.
 */
import { createContext, HTTPError, type JSONValue, type Storage, type SyncContext, type SyncOptions } from '../../src/index.js';

/** The inspector's secret in tests: 32 characters or more, and in no doc. */
export const SECRET = 'inspector-test-secret-7f3a9c1e5b2d8046';

/** The webhook's signing secret. */
export const HOOK_SECRET = 'inspector-hook-secret-0a1b2c3d4e5f6789';

export const mutators = {
  put: async (tx: { set(key: string, value: JSONValue): Promise<void> }, args: unknown) => {
    const { key, value } = args as { key: string; value: JSONValue };
    await tx.set(key, value);
  },
  del: async (tx: { del(key: string): Promise<boolean> }, args: unknown) => {
    await tx.del((args as { key: string }).key);
  },
} satisfies SyncOptions['mutators'];

/** A context of the app on `storage`; `webhook`: where its webhook delivers (a local receiver). */
/** `webhookRetryForMs`: how long the webhook retries a batch before it is disabled in the space (default a minute). */
export function inspectorApp(
  storage: Storage,
  options: {
    webhook?: string;
    webhookRetryForMs?: number;
    readOnly?: boolean;
    onAction?: NonNullable<SyncOptions['inspector']>['onAction'];
    onError?: SyncOptions['onError'];
  } = {},
): SyncContext {
  return createContext({
    storage,
    mutators,
    authenticate: (request) => request.headers.get('authorization')?.replace(/^Bearer /, '') || null,
    space: (request) => new URL(request.url).searchParams.get('space') ?? '',
    // Each user reads their membership rows and the lists they are a member of; `banned` is refused.
    view: async (tx, { userID }) => {
      if (userID === 'banned') throw new HTTPError(403, 'banned users read nothing');
      const lists: string[] = [];
      for await (const key of tx.scan({ prefix: `member/${userID}/` }).keys()) lists.push(`list/${key.slice(`member/${userID}/`.length)}`);
      return [`member/${userID}/`, ...lists];
    },
    changes:
      options.webhook === undefined
        ? {}
        : { webhooks: { search: { url: options.webhook, secret: HOOK_SECRET, allowPrivateAddresses: true, retryForMs: options.webhookRetryForMs ?? 60_000 } } },
    history: {},
    pokes: {},
    inspector: { secret: SECRET, ...(options.readOnly !== undefined && { readOnly: options.readOnly }), onAction: options.onAction ?? (() => {}) },
    ...(options.onError && { onError: options.onError }),
  });
}

/** Each client's last mutation ID, by server (its handler) and by space and user: a client's IDs run 1, 2, 3… in its space. */
const sentBy = new WeakMap<object, Map<string, number>>();

/** Pushes `mutations` as `user` into `space` through the context's handler (a real push body). */
export async function pushAs(
  handle: (request: Request) => Promise<Response>,
  space: string,
  user: string,
  mutations: Array<{ name: 'put' | 'del'; args: JSONValue }>,
  base = 'http://localhost',
): Promise<void> {
  const clientGroupID = `group-${user}`;
  const client = `${space}\0${user}`;
  let sent = sentBy.get(handle);
  if (sent === undefined) sentBy.set(handle, (sent = new Map()));
  const ids = () => {
    const id = (sent.get(client) ?? 0) + 1;
    sent.set(client, id);
    return id;
  };
  const body = {
    pushVersion: 1,
    clientGroupID,
    profileID: 'p',
    schemaVersion: '',
    mutations: mutations.map(({ name, args }) => ({ clientID: `client-${user}`, id: ids(), name, args, timestamp: Date.now() })),
  };
  const response = await handle(
    new Request(`${base}/push?space=${encodeURIComponent(space)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user}` },
      body: JSON.stringify(body),
    }),
  );
  if (response.status !== 200) throw new Error(`push answered ${response.status}: ${await response.text()}`);
}

/** The demo space `acme`: ann's and bob's memberships and 30 to-dos in three lists, as the dev server and the screenshots show it. */
export function seedAcme(handle: (request: Request) => Promise<Response>): Promise<void> {
  return pushAs(handle, 'acme', 'ann', [
    { name: 'put', args: { key: 'member/ann/1', value: true } },
    { name: 'put', args: { key: 'member/ann/2', value: true } },
    { name: 'put', args: { key: 'member/bob/2', value: true } },
    ...Array.from({ length: 30 }, (_, i) => ({
      name: 'put' as const,
      args: { key: `list/${1 + (i % 3)}/todo/${i}`, value: { title: `Todo ${i}`, done: i % 4 === 0 } },
    })),
  ]);
}
