/**
 * A client group that speaks the protocol by hand, for volume: it makes mutations, pushes every
 * one not yet acknowledged (as the real client does), pulls with its cookie and applies the
 * patch, and records every request and answer. It sends each request to a server picked at
 * random among those up, goes offline now and then, and starts a new group when told
 * ClientStateNotFound (its pending mutations go, as they do in the real client).
 *
 * A ghost group pushes its first mutation, forgets the answer (a tab closed before a pull
 * confirmed it), and comes back only once the servers' clock has moved on past housekeeping's
 * retention, re-sending it: the server must tell it ClientStateNotFound, never apply it again.
 */
import type { JSONValue } from '../../src/index.js';
import { compareCookies } from './checker.js';
import type { Exchange, PullAnswer } from './history.js';
import type { Random } from './rng.js';

export interface ClientEnvironment {
  /** Base URLs of the servers up now. */
  servers(): string[];
  /** Records an exchange. */
  record(exchange: Exchange): void;
  /** How many times the servers' clock has been moved on so far. */
  clockJumps(): number;
  /** True once the run is over: the client stops making mutations. */
  stopping(): boolean;
  /** True once clients must stop everything (after they have settled). */
  stopped(): boolean;
  /** Milliseconds a request may take before the client gives up on it (a network that never answers). */
  requestTimeoutMs: number;
}

let groups = 0;

export class RawClient {
  readonly space: string;
  readonly #env: ClientEnvironment;
  readonly #rng: Random;
  readonly #label: string;
  readonly #ghost: boolean;
  #group = '';
  #clients: string[] = [];
  #cookie: JSONValue = null;
  #view = new Map<string, JSONValue>();
  /** Per client: the next id, and the last one the server acknowledged. */
  #next = new Map<string, number>();
  #acked = new Map<string, number>();
  #pending: Array<{ clientID: string; id: number; name: string; args: JSONValue }> = [];
  #scratch = 0;

  constructor(label: string, space: string, rng: Random, env: ClientEnvironment, { ghost = false } = {}) {
    this.#label = label;
    this.space = space;
    this.#rng = rng;
    this.#env = env;
    this.#ghost = ghost;
    this.#newGroup();
  }

  get group(): string {
    return this.#group;
  }

  get view(): Map<string, JSONValue> {
    return this.#view;
  }

  /** Runs until the run stops making mutations, then settles: pushes what is pending until acknowledged, and pulls. */
  async run(): Promise<void> {
    if (this.#ghost) await this.#haunt();
    let failures = 0;
    while (!this.#env.stopping()) {
      if (this.#rng.chance(0.01)) await sleep(this.#rng.int(500, 4_000)); // offline, then back
      if (this.#rng.chance(0.7)) this.#mutate(this.#rng.int(1, 3));
      if (this.#pending.length > 0) await this.push();
      const pulled = await this.pull();
      // As the real client: after a failure, back off exponentially (from 30 ms, here up to 1 s).
      failures = pulled ? 0 : failures + 1;
      await sleep(failures === 0 ? this.#rng.int(5, 60) : Math.min(30 * 2 ** failures, 1_000));
    }
  }

  /** Pushes and pulls until nothing is pending and a pull has succeeded (true), or the run stops (false). */
  async settle(): Promise<boolean> {
    for (let tries = 0; !this.#env.stopped(); tries++) {
      if (this.#pending.length > 0) await this.push();
      if (this.#pending.length === 0 && (await this.pull())) return true;
      await sleep(Math.min(50 * 2 ** tries, 1_000));
    }
    return false;
  }

  /** One pull with the group's cookie; true when it brought the group up to date. */
  async pull(): Promise<boolean> {
    const body = { pullVersion: 1 as const, clientGroupID: this.#group, cookie: this.#cookie, profileID: this.#label, schemaVersion: '' };
    const { status, answer } = await this.#send('pull', body);
    if (status !== 200) return false;
    if (isLost(answer)) return (this.#newGroup(), false);
    const pull = answer as PullAnswer;
    // The client's own rule: a cookie equal to its own changes nothing; a lower one is refused.
    if (compareCookies(pull.cookie, this.#cookie) <= 0) return true;
    for (const op of pull.patch) {
      if (op.op === 'clear') this.#view.clear();
      else if (op.op === 'put') this.#view.set(op.key, op.value);
      else this.#view.delete(op.key);
    }
    for (const [client, id] of Object.entries(pull.lastMutationIDChanges)) if (this.#next.has(client)) this.#confirm(client, id);
    this.#cookie = pull.cookie;
    return true;
  }

  async push(): Promise<void> {
    const mutations = this.#pending.slice(0, 50);
    const body = {
      pushVersion: 1 as const,
      clientGroupID: this.#group,
      mutations: mutations.map((m) => ({ ...m, timestamp: performance.now() })),
      profileID: this.#label,
      schemaVersion: '',
    };
    const { status, answer } = await this.#send('push', body);
    if (status !== 200) return;
    if (isLost(answer)) return this.#newGroup();
    // Committed: every mutation sent (each the next of its client) is processed.
    for (const { clientID, id } of mutations) this.#confirm(clientID, id);
  }

  #mutate(count: number): void {
    for (let i = 0; i < count; i++) {
      const clientID = this.#rng.pick(this.#clients);
      const id = this.#next.get(clientID)!;
      this.#next.set(clientID, id + 1);
      const scratch = this.#rng.chance(0.3);
      if (scratch) this.#scratch++;
      const args: JSONValue = scratch ? { n: this.#rng.int(0, Math.max(0, this.#scratch)), del: this.#rng.chance(0.4) } : null;
      this.#pending.push({ clientID, id, name: scratch ? 'scratch' : 'inc', args });
    }
  }

  #confirm(clientID: string, id: number): void {
    this.#acked.set(clientID, Math.max(this.#acked.get(clientID) ?? 0, id));
    this.#pending = this.#pending.filter((m) => m.clientID !== clientID || m.id > id);
  }

  /** A new group, with one or two clients (tabs) of its own, from an empty view. */
  #newGroup(): void {
    const n = ++groups;
    this.#group = `${this.#label}-g${n}`;
    this.#clients = this.#rng.chance(0.3) ? [`${this.#label}-c${n}a`, `${this.#label}-c${n}b`] : [`${this.#label}-c${n}a`];
    this.#next = new Map(this.#clients.map((client) => [client, 1]));
    this.#acked = new Map();
    this.#pending = [];
    this.#cookie = null;
    this.#view = new Map();
  }

  /** The ghost's first push, whose answer it never reads, and its long sleep. */
  async #haunt(): Promise<void> {
    this.#mutate(1);
    const first = this.#pending[0]!;
    await this.push();
    // The answer is forgotten: the tab closed. What it holds is the mutation, still pending.
    this.#acked.clear();
    this.#pending = [first];
    const jumps = this.#env.clockJumps();
    while (this.#env.clockJumps() < jumps + GHOST_JUMPS && !this.#env.stopping()) await sleep(100);
  }

  async #send(kind: 'push' | 'pull', body: Exchange['body']): Promise<{ status: number | 'network'; answer: unknown }> {
    const servers = this.#env.servers();
    const start = performance.now();
    let status: number | 'network' = 'network';
    let answer: unknown;
    if (servers.length > 0) {
      try {
        const response = await fetch(`${this.#rng.pick(servers)}${kind}?space=${encodeURIComponent(this.space)}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: '' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(this.#env.requestTimeoutMs),
        });
        const text = await response.text();
        status = response.status;
        answer = status === 200 ? JSON.parse(text) : text;
      } catch (error) {
        status = 'network';
        answer = String(error);
      }
    }
    this.#env.record({ group: this.#group, space: this.space, kind, start, end: performance.now(), body: body as Exchange['body'], status, answer });
    return { status, answer };
  }
}

/** Clock jumps a ghost sleeps through: enough for housekeeping to expire its group, and for a marker that would last only as long as tombstones to go too. */
export const GHOST_JUMPS = 9;

function isLost(answer: unknown): boolean {
  return typeof answer === 'object' && answer !== null && (answer as { error?: unknown }).error === 'ClientStateNotFound';
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
