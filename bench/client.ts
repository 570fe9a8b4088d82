import { type JSONValue, type Mutators, type SyncContext, handlePull, handlePush } from '../src/index.js';

/** The one mutator the benchmark uses: the `put` of the real client's fixtures. */
export const benchMutators: Mutators = {
  put: async (tx, { key, value }: { key: string; value: JSONValue }) => {
    await tx.set(key, value);
  },
};

/** A small value, shaped like a typical app row (a todo), so sizes stay realistic. */
export function rowValue(n: number, revision = 0): JSONValue {
  return { title: `Item ${n}`, done: revision % 2 === 1, order: n, revision };
}

/** A zero-padded key, so seeding appends in key order and keys stay distinct. */
export function rowKey(n: number): string {
  return `item/${String(n).padStart(8, '0')}`;
}

/** A POST with a JSON body and the headers the real client sends. */
function post(path: string, body: unknown): Request {
  return new Request(`http://localhost${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: '', 'x-replicache-requestid': 'bench' },
    body: JSON.stringify(body),
  });
}

/**
 * One client of one client group, numbering its mutations as Replicache does: every push carries
 * only new mutations, the ids following on from the last acknowledged one.
 */
export class BenchClient {
  readonly clientGroupID: string;
  readonly clientID: string;
  #lastMutationID = 0;

  constructor(name: string) {
    this.clientGroupID = `group-${name}`;
    this.clientID = `client-${name}`;
  }

  /** A push request of `puts`, one `put` mutation each, with the next consecutive ids. */
  pushRequest(puts: ReadonlyArray<{ key: string; value: JSONValue }>): Request {
    const mutations = puts.map((args) => ({
      clientID: this.clientID,
      id: ++this.#lastMutationID,
      name: 'put',
      args,
      timestamp: performance.now(),
    }));
    return post('/push', { pushVersion: 1, clientGroupID: this.clientGroupID, mutations, profileID: 'bench-profile', schemaVersion: '' });
  }

  /** A version 1 pull request from `cookie`. */
  pullRequest(cookie: JSONValue): Request {
    return post('/pull', { pullVersion: 1, clientGroupID: this.clientGroupID, cookie, profileID: 'bench-profile', schemaVersion: '' });
  }

  /** Pushes and throws unless the server accepted the push. */
  async push(ctx: SyncContext, puts: ReadonlyArray<{ key: string; value: JSONValue }>): Promise<void> {
    await expectOK(await handlePush(this.pushRequest(puts), ctx), 'push');
  }

  /** Pulls and returns the parsed 200 body. */
  async pull(ctx: SyncContext, cookie: JSONValue): Promise<PullBody> {
    const response = await handlePull(this.pullRequest(cookie), ctx);
    return JSON.parse(await expectOK(response, 'pull')) as PullBody;
  }
}

/** The body of a successful version 1 pull, as far as the benchmark checks it. */
export interface PullBody {
  cookie: JSONValue;
  lastMutationIDChanges: Record<string, number>;
  patch: Array<{ op: string; key?: string; value?: JSONValue }>;
}

/** The body text of a 200 response; anything else aborts the run, since its numbers would lie. */
export async function expectOK(response: Response, what: string): Promise<string> {
  const text = await response.text();
  if (response.status !== 200 || text.includes('"error"')) throw new Error(`${what} failed: ${response.status} ${text.slice(0, 300)}`);
  return text;
}
