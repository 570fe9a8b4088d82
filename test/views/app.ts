/**
 * The per-user view the view tests share: documents under `doc/<id>/`, and a membership entry
 * `member/<user>/<id>` (value: the document's id) for each document a user may read. A user
 * reads their own membership entries and the documents they name.
 */
import type { JSONValue, SyncContext, SyncOptions, View } from '../../src/index.js';
import { applyPatch, mutation, pull, push, testContext } from '../support/helpers.js';

export const membershipView = (async (tx, { userID }) => {
  const prefixes = [`member/${userID}/`];
  for await (const doc of tx.scan({ prefix: `member/${userID}/` })) prefixes.push(`doc/${doc as string}/`);
  return prefixes;
}) satisfies View;

/** Requests as `user`: the test contexts take the Authorization header as the user ID. */
export const as = (user: string) => ({ authorization: user });

/** A context on `storage` with {@link membershipView}, users named by their Authorization header. */
export function viewContext(overrides: Partial<SyncOptions> = {}): ReturnType<typeof testContext> {
  return testContext({ authenticate: (request) => request.headers.get('authorization') || null, view: membershipView, ...overrides });
}

let ids = 0;

/** Writes entries as `user` (a client of its own), in one push. */
export async function write(ctx: SyncContext, user: string, entries: Record<string, JSONValue | undefined>): Promise<void> {
  const clientID = `writer-${user}-${++ids}`;
  const mutations = Object.entries(entries).map(([key, value], i) =>
    mutation(clientID, i + 1, value === undefined ? 'del' : 'put', value === undefined ? { key } : { key, value }),
  );
  await push(ctx, `writer-group-${ids}`, mutations, as(user));
}

/** A client of `user`: pulls as `group` and keeps what the patches give it. */
export class ViewClient {
  cookie: JSONValue = null;
  data = new Map<string, JSONValue>();
  readonly #ctx: SyncContext;
  readonly #user: string;
  readonly group: string;

  constructor(ctx: SyncContext, user: string, group = `${user}-group`) {
    this.#ctx = ctx;
    this.#user = user;
    this.group = group;
  }

  /** Pulls, applies the patch and returns it. */
  async pull() {
    const body = await pull(this.#ctx, this.group, this.cookie, as(this.#user));
    this.data = applyPatch(this.data, body.patch);
    this.cookie = body.cookie;
    return body;
  }
}
