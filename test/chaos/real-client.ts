/**
 * Real `replicache` clients in a chaos run (in this process, on fake IndexedDB), and the `fetch`
 * they send through: it sends each request to a server picked at random among those up (the
 * clients' URLs name a placeholder origin) and records every pull and push with its answer,
 * which the checker judges as it judges the raw clients'. A client goes offline now and then (its
 * instance closed, its local database kept) and comes back under the same name, with whatever it
 * had pending; told ClientStateNotFound, it starts again under a new name, as a reloaded page does.
 */
import 'fake-indexeddb/auto';
import { Replicache } from 'replicache';
import { connectPokes, type PokeConnection } from '../../src/client/pokes.js';
import type { JSONValue } from '../../src/index.js';
import { chaosMutators } from './app.js';
import type { Exchange } from './history.js';
import type { ClientEnvironment } from './raw-client.js';
import type { Random } from './rng.js';

/** The origin the real clients' URLs name; the run's `fetch` sends their requests to a server that is up. */
export const VIRTUAL = 'http://chaos.invalid/';

/** Routes and records the real clients' requests; returns what puts `fetch` back. */
export function installFetch(env: ClientEnvironment, rng: Random): () => void {
  const original = globalThis.fetch;
  globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = input instanceof Request ? input.url : String(input);
    if (!url.startsWith(VIRTUAL)) return original(input, init);
    const servers = env.servers();
    if (servers.length === 0) throw new TypeError('fetch failed: no server is up');
    const target = rng.pick(servers) + url.slice(VIRTUAL.length);
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    const bodyText = init?.body !== undefined ? String(init.body) : input instanceof Request && method === 'POST' ? await input.clone().text() : undefined;
    const kind = new URL(url).pathname.slice(1);
    if (method !== 'POST' || (kind !== 'pull' && kind !== 'push')) return original(target, { ...init, method, headers });
    const body = JSON.parse(bodyText!) as Exchange['body'];
    const space = new URL(url).searchParams.get('space') ?? '';
    // `<clientID>-<sessionID>-<n>`: the client instance.
    const instance = headers.get('x-replicache-requestid')?.split('-')[0];
    const start = performance.now();
    try {
      // The client's own signal is one for its whole life: a listener per request would pile up on it.
      const response = await original(target, { method, headers, body: bodyText, signal: AbortSignal.timeout(env.requestTimeoutMs) });
      const text = await response.text();
      let answer: unknown = text;
      if (response.status === 200) answer = JSON.parse(text);
      env.record({ group: body.clientGroupID, instance, space, kind, start, end: performance.now(), body, status: response.status, answer });
      return new Response(text, { status: response.status, headers: response.headers });
    } catch (error) {
      env.record({ group: body.clientGroupID, instance, space, kind, start, end: performance.now(), body, status: 'network', answer: String(error) });
      throw error;
    }
  };
  return () => {
    globalThis.fetch = original;
  };
}

type Rep = Replicache<typeof chaosMutators>;

export class RealClient {
  readonly space: string;
  readonly #env: ClientEnvironment;
  readonly #rng: Random;
  readonly #label: string;
  readonly logs: string[] = [];
  #name: string;
  #resets = 0;
  #rep: Rep | undefined;
  #pokes: PokeConnection | undefined;
  #lost = false;

  constructor(label: string, space: string, rng: Random, env: ClientEnvironment) {
    this.#label = label;
    this.space = space;
    this.#rng = rng;
    this.#env = env;
    this.#name = `${label}-${Date.now().toString(36)}-0`;
  }

  /** Runs until the run stops making mutations. */
  async run(): Promise<void> {
    this.#open();
    while (!this.#env.stopping()) {
      if (this.#lost) this.#startAgain();
      const rep = this.#rep!;
      if (this.#rng.chance(0.7)) {
        const n = this.#rng.int(0, 20);
        await (this.#rng.chance(0.3) ? rep.mutate.scratch({ n, del: this.#rng.chance(0.4) }) : rep.mutate.inc()).catch((error: unknown) =>
          this.logs.push(`mutate: ${String(error)}`),
        );
      }
      await sleep(this.#rng.int(20, 200));
      if (this.#rng.chance(0.01)) {
        // Offline: the tab closes, its database stays; it comes back under the same name.
        await this.#close();
        await sleep(this.#rng.int(500, 3_000));
        this.#open();
      }
    }
  }

  /** Waits until nothing is pending (its pushes acknowledged by a pull), or the run stops. */
  async drain(): Promise<void> {
    for (let tries = 0; !this.#env.stopped(); tries++) {
      if (this.#lost) this.#startAgain();
      try {
        if ((await this.#rep!.experimentalPendingMutations()).length === 0) return;
        await this.#rep!.pull({ now: true });
      } catch (error) {
        this.logs.push(`drain: ${String(error)}`);
      }
      await sleep(Math.min(100 * 2 ** tries, 1_000));
    }
  }

  /** Pulls once more (every client has pushed by now), and returns what the client holds. */
  async final(): Promise<{ group: string; view: Map<string, JSONValue> }> {
    if (this.#lost) this.#startAgain();
    const rep = this.#rep!;
    await rep.pull({ now: true });
    const view = new Map<string, JSONValue>(await rep.query(async (tx) => (await tx.scan().entries().toArray()) as Array<[string, JSONValue]>));
    return { group: await rep.clientGroupID, view };
  }

  async close(): Promise<void> {
    await this.#close();
  }

  #open(): void {
    const url = `${VIRTUAL}%s?space=${encodeURIComponent(this.space)}`;
    const rep: Rep = new Replicache({
      name: this.#name,
      mutators: chaosMutators,
      pullURL: url.replace('%s', 'pull'),
      pushURL: url.replace('%s', 'push'),
      auth: '',
      pullInterval: 1_000,
      pushDelay: 0,
      requestOptions: { minDelayMs: 20, maxDelayMs: 500 },
      logLevel: 'error',
      logSinks: [{ log: (level, _context, ...args) => void this.logs.push(`${level}: ${args.map(String).join(' ')}`.slice(0, 500)) }],
      kvStore: 'idb',
    });
    rep.onClientStateNotFound = () => {
      this.#lost = true;
    };
    rep.onUpdateNeeded = (reason) => this.logs.push(`onUpdateNeeded: ${JSON.stringify(reason)}`);
    this.#rep = rep;
    this.#pokes = connectPokes(rep, url.replace('%s', 'poke'), { minDelayMs: 100, maxDelayMs: 1_000 });
  }

  async #close(): Promise<void> {
    this.#pokes?.close();
    await this.#rep?.close().catch(() => {});
  }

  /** Told ClientStateNotFound: a reloaded page, a new local database and group. */
  #startAgain(): void {
    this.#lost = false;
    void this.#close();
    this.#name = `${this.#label}-${Date.now().toString(36)}-${++this.#resets}`;
    this.#open();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
