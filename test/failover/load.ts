/**
 * Raw protocol clients under load, for failover tests: writer groups that push mutations whose
 * effect makes exactly-once checkable (a counter per client and one entry per mutation ID) and
 * pull their own group, and observer groups that only pull. Each keeps what it was told (cookie,
 * lastMutationID, view) and records anything that went backwards; a group told
 * `ClientStateNotFound` starts again as a new group with a new client, as the real client does.
 * Plain functions over `handlePush` / `handlePull` in process, no test framework.
 */
import { createContext, handlePull, handlePush, type JSONValue, type Mutators, type SyncContext } from '../../src/index.js';
import type { PatchOperation } from '../../src/protocol.js';
import { compareCookies } from '../../src/sync/version/cookie.js';

/** Each mutation adds one to its client's counter and writes an entry of its own ID. */
export const countingMutators: Mutators = {
  add: async (tx) => {
    const key = `count/${tx.clientID}`;
    await tx.set(key, (((await tx.get(key)) as number | undefined) ?? 0) + 1);
    await tx.set(`m/${tx.clientID}/${tx.mutationID}`, tx.mutationID);
  },
};

/** One life of a client group: from its first request to the `ClientStateNotFound` that ended it, if one did. */
export interface Generation {
  readonly groupID: string;
  /** Its one client (writers) or none (observers). */
  readonly clientID: string | undefined;
  /** The next mutation ID to push. */
  next: number;
  /** The highest mutation ID of a push answered 200 (not ClientStateNotFound). */
  acknowledged: number;
  /** What pulls told it. */
  cookie: JSONValue;
  lastMutationID: number;
  view: Map<string, JSONValue>;
  /** How it ended: told ClientStateNotFound on a push or a pull. */
  ended?: 'push' | 'pull';
  /** Anything a pull told it that went backwards. */
  backwards: string[];
  /** Pulls with a cookie answered with the whole data again (a patch that starts with `clear`). */
  resets?: number;
}

/** A client group across its lives. */
export interface Group {
  readonly name: string;
  readonly writes: boolean;
  readonly generations: Generation[];
  /** Pushes (writers) or pulls (observers) answered 200, and sent after `mark()`. */
  answeredAfterMark: number;
}

/** What the load saw. */
export interface LoadStats {
  /** Answers by status, for pushes and pulls. */
  push: Map<number, number>;
  pull: Map<number, number>;
  /** The messages of the errors behind answers other than 200 and 503 (from `onError`). */
  failures: string[];
  /** What the 503s were for: the code (or message) of the store's error, and how many. */
  unavailable: Map<string, number>;
  /** Pushes answered 200 and sent at or after `mark()`, with when the first was answered. */
  firstPushAfterMark: number | undefined;
  pushesAfterMark: number;
  pullsAfterMark: number;
}

/** Options for {@link startLoad}. */
export interface LoadOptions {
  writers?: number;
  observers?: number;
  /** Mutations per push: 1 to this many. Default 3. */
  batch?: number;
  /** Pause after an answered request, and after a 503 (the client's backoff, short so that the time to the first push after a failover measures the server, not the client). */
  pauseMs?: number;
  retryMs?: number;
  /** Put before every group's name, so that loads run one after another on one store share no client. Default: none. */
  prefix?: string;
}

/** A running load. */
export interface Load {
  readonly groups: Group[];
  readonly stats: LoadStats;
  /** From now on, count pushes and pulls answered 200 (`stats.*AfterMark`). */
  mark(): void;
  /** Stops sending; resolves once every request under way is answered. */
  stop(): Promise<void>;
}

/**
 * Starts writers and observers against `served`'s options (whose mutators must include
 * {@link countingMutators}), through a context of their own whose onError records what failed.
 */
export function startLoad(served: SyncContext, options: LoadOptions = {}): Load {
  const { writers = 4, observers = 3, batch = 3, pauseMs = 10, retryMs = 20, prefix = '' } = options;
  const stats: LoadStats = {
    push: new Map(),
    pull: new Map(),
    failures: [],
    unavailable: new Map(),
    firstPushAfterMark: undefined,
    pushesAfterMark: 0,
    pullsAfterMark: 0,
  };
  const report = served.onError;
  const errors = new WeakMap<Request, unknown>();
  // The load's own context over the same options, its onError recording what failed.
  const ctx = createContext({
    ...served.options,
    onError: (error, info) => {
      if (info.request !== undefined) errors.set(info.request, error);
      report?.(error, info);
    },
  });
  let running = true;
  let markedAt: number | undefined;
  const groups: Group[] = [
    ...Array.from({ length: writers }, (_, i) => ({ name: `${prefix}w${i}`, writes: true, generations: [], answeredAfterMark: 0 })),
    ...Array.from({ length: observers }, (_, i) => ({ name: `${prefix}o${i}`, writes: false, generations: [], answeredAfterMark: 0 })),
  ];
  const renew = (group: Group) => {
    const n = group.generations.length;
    group.generations.push({
      groupID: `${group.name}-g${n}`,
      clientID: group.writes ? `${group.name}-c${n}` : undefined,
      next: 1,
      acknowledged: 0,
      cookie: null,
      lastMutationID: 0,
      view: new Map(),
      backwards: [],
    });
  };
  for (const group of groups) renew(group);
  const count = (map: Map<number, number>, status: number) => map.set(status, (map.get(status) ?? 0) + 1);
  /** Sends `request`; answers its status and body, and records the error behind a 5xx other than 503. */
  const send = async (handler: typeof handlePush, request: Request): Promise<[number, unknown]> => {
    const response = await handler(request, ctx);
    const text = await response.text();
    if (response.status === 503) {
      const cause = (errors.get(request) as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
      const key = String(cause?.code ?? cause?.message ?? 'unknown');
      stats.unavailable.set(key, (stats.unavailable.get(key) ?? 0) + 1);
    } else if (response.status !== 200) stats.failures.push(`${response.status}: ${describe(errors.get(request)) ?? text}`);
    return [response.status, response.status === 200 ? JSON.parse(text) : undefined];
  };

  const pushLoop = async (group: Group) => {
    while (running) {
      const life = group.generations.at(-1)!;
      const size = 1 + Math.floor(Math.random() * batch);
      const mutations = Array.from({ length: size }, (_, k) => ({
        clientID: life.clientID!,
        id: life.next + k,
        name: 'add',
        args: null,
        timestamp: Date.now(),
      }));
      const sentAt = performance.now();
      const [status, body] = await send(
        handlePush,
        post('/push', { pushVersion: 1, clientGroupID: life.groupID, mutations, profileID: 'p', schemaVersion: '' }),
      );
      count(stats.push, status);
      if (group.generations.at(-1) !== life) continue;
      if (status === 200 && (body as { error?: string }).error === 'ClientStateNotFound') {
        life.ended = 'push';
        renew(group);
      } else if (status === 200) {
        life.next += size;
        life.acknowledged = life.next - 1;
        if (markedAt !== undefined && sentAt >= markedAt) {
          stats.pushesAfterMark++;
          group.answeredAfterMark++;
          stats.firstPushAfterMark ??= performance.now();
        }
      }
      await sleep(status === 200 ? pauseMs : retryMs);
    }
  };

  const pullLoop = async (group: Group) => {
    while (running) {
      const life = group.generations.at(-1)!;
      const sentAt = performance.now();
      const [status, body] = await send(
        handlePull,
        post('/pull', { pullVersion: 1, clientGroupID: life.groupID, cookie: life.cookie, profileID: 'p', schemaVersion: '' }),
      );
      count(stats.pull, status);
      if (group.generations.at(-1) === life && status === 200) {
        if ((body as { error?: string }).error === 'ClientStateNotFound') {
          life.ended = 'pull';
          renew(group);
        } else {
          if (life.cookie !== null && (body as PullAnswer).patch[0]?.op === 'clear') life.resets = (life.resets ?? 0) + 1;
          take(life, body as PullAnswer);
          if (markedAt !== undefined && sentAt >= markedAt) {
            stats.pullsAfterMark++;
            if (!group.writes) group.answeredAfterMark++;
          }
        }
      }
      await sleep(status === 200 ? pauseMs * 3 : retryMs);
    }
  };

  const loops = groups.flatMap((group) => (group.writes ? [pushLoop(group), pullLoop(group)] : [pullLoop(group)]));
  return {
    groups,
    stats,
    mark: () => void (markedAt = performance.now()),
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** A pull's answer (not ClientStateNotFound). */
export interface PullAnswer {
  cookie: JSONValue;
  lastMutationIDChanges: Record<string, number>;
  patch: PatchOperation[];
}

/** Takes a pull's answer into `life`, recording whatever went backwards. */
export function take(life: Generation, answer: PullAnswer): void {
  if (compareCookies(answer.cookie, life.cookie) < 0) life.backwards.push(`cookie ${JSON.stringify(life.cookie)} -> ${JSON.stringify(answer.cookie)}`);
  const told = life.clientID === undefined ? undefined : answer.lastMutationIDChanges[life.clientID];
  if (told !== undefined) {
    if (told < life.lastMutationID) life.backwards.push(`lastMutationID ${life.lastMutationID} -> ${told}`);
    life.lastMutationID = told;
  }
  for (const op of answer.patch) {
    if (op.op === 'clear') life.view.clear();
    else if (op.op === 'put') life.view.set(op.key, op.value);
    else life.view.delete(op.key);
  }
  life.cookie = answer.cookie;
}

/** Pulls for `life` until answered 200 (503s retried, for up to `timeoutMs`); resolves to the answer. */
export async function pullOnce(ctx: SyncContext, life: Pick<Generation, 'groupID' | 'cookie'>, timeoutMs = 30_000): Promise<PullAnswer | { error: string }> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const response = await handlePull(
      post('/pull', { pullVersion: 1, clientGroupID: life.groupID, cookie: life.cookie, profileID: 'p', schemaVersion: '' }),
      ctx,
    );
    const text = await response.text();
    if (response.status === 200) return JSON.parse(text) as PullAnswer | { error: string };
    if (response.status !== 503 || performance.now() > deadline) throw new Error(`pull for ${life.groupID}: ${response.status} ${text}`);
    await sleep(50);
  }
}

function post(path: string, body: unknown): Request {
  return new Request(`http://localhost${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

function describe(error: unknown): string | undefined {
  if (error === undefined) return undefined;
  const { code, message, cause } = error as { code?: unknown; message?: unknown; cause?: unknown };
  return `${String(message)}${code === undefined ? '' : ` (${String(code)})`}${cause === undefined ? '' : `; cause: ${describe(cause)}`}`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
