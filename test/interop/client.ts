/**
 * Helpers to drive the real `replicache` client in Node against a running server: the client
 * mutators that mirror the server's (`test/runtime/app.ts`), a factory that opens instances with
 * test-friendly options and remembers them for closing, bounded waits, a way to read what the
 * server holds, and a record of the client's HTTP requests.
 */
import 'fake-indexeddb/auto';
import { Replicache, type LogLevel, type LogSink, type MutatorDefs, type ReadonlyJSONValue } from 'replicache';
import { runtimeMutators } from '../runtime/app.js';

/**
 * The client runs the server's own mutator source (`runtimeMutators`), typed against the
 * client's `WriteTransaction`: the server accepts it as it is, with no cast on either side.
 */
export const clientMutators = runtimeMutators;

/** A name no earlier run or test used, so no IndexedDB state leaks in. */
export function uniqueName(label: string): string {
  return `${label}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
}

export interface LogEntry {
  level: LogLevel;
  message: string;
}

export interface OpenOptions<MD extends MutatorDefs> {
  name: string;
  /** Default: {@link clientMutators}. */
  mutators?: MD;
  auth?: string;
  getAuth?: () => string | null | undefined | Promise<string | null | undefined>;
  onClientStateNotFound?: () => void;
  /** Default: 100 ms. */
  pullInterval?: number | null;
  /** Default: `''`. A new one opens a new local database and client group (an app's new version). */
  schemaVersion?: string;
}

export type Rep<MD extends MutatorDefs = typeof clientMutators> = Replicache<MD> & {
  /** What this instance logged at info level and above. */
  readonly logs: LogEntry[];
  /** Calls of `onUpdateNeeded`. */
  readonly updatesNeeded: unknown[];
};

/**
 * Opens Replicache instances on one server and closes them all in {@link closeAll}.
 * `onClientStateNotFound` and `onUpdateNeeded` never reload a page; logs are collected,
 * not printed (set INTEROP_LOGS=1 to print them too).
 */
export class Clients {
  readonly #open: Array<Replicache<MutatorDefs>> = [];
  readonly #url: () => URL;

  constructor(url: () => URL) {
    this.#url = url;
  }

  open<MD extends MutatorDefs = typeof clientMutators>(options: OpenOptions<MD>): Rep<MD> {
    const logs: LogEntry[] = [];
    const updatesNeeded: unknown[] = [];
    const sink: LogSink = {
      log(level: LogLevel, context: unknown, ...args: unknown[]) {
        const message = args.map((arg) => (arg instanceof Error ? `${arg.name}: ${arg.message}` : typeof arg === 'string' ? arg : safeJSON(arg))).join(' ');
        logs.push({ level, message });
        if (process.env.INTEROP_LOGS) console.log(`[replicache ${options.name} ${level}]`, safeJSON(context), message);
      },
    };
    const url = this.#url();
    const rep = new Replicache<MD>({
      name: options.name,
      mutators: (options.mutators ?? clientMutators) as unknown as MD,
      pullURL: new URL('pull', url).href,
      pushURL: new URL('push', url).href,
      auth: options.auth ?? '',
      pullInterval: options.pullInterval === undefined ? 100 : options.pullInterval,
      pushDelay: 0,
      schemaVersion: options.schemaVersion ?? '',
      // Retries after a failure back off from 10 ms up to 200 ms, not 60 s.
      requestOptions: { minDelayMs: 10, maxDelayMs: 200 },
      logLevel: 'info',
      logSinks: [sink],
      kvStore: 'idb',
    });
    rep.onClientStateNotFound = options.onClientStateNotFound ?? (() => logs.push({ level: 'error', message: 'onClientStateNotFound (unexpected)' }));
    rep.onUpdateNeeded = (reason) => updatesNeeded.push(reason);
    if (options.getAuth) rep.getAuth = options.getAuth;
    this.#open.push(rep as unknown as Replicache<MutatorDefs>);
    return Object.assign(rep, { logs, updatesNeeded }) as Rep<MD>;
  }

  async closeAll(): Promise<void> {
    const open = this.#open.splice(0);
    await Promise.all(open.map((rep) => (rep.closed ? undefined : rep.close())));
  }
}

function safeJSON(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * Polls `condition` every `interval` ms until it returns true; throws `message` (and the last
 * value or error seen) after `timeout` ms.
 */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  { timeout = 10_000, interval = 25, message = 'condition' }: { timeout?: number; interval?: number; message?: string | (() => string) } = {},
): Promise<void> {
  const deadline = Date.now() + timeout;
  let lastError: unknown;
  for (;;) {
    try {
      if (await condition()) return;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const what = typeof message === 'function' ? message() : message;
      throw new Error(`Timed out after ${timeout} ms waiting for ${what}${lastError ? `; last error: ${String(lastError)}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}

/** Everything the instance holds locally, as a plain object. */
export async function snapshot(rep: Replicache<MutatorDefs>, prefix = ''): Promise<Record<string, ReadonlyJSONValue>> {
  return rep.query(async (tx) => Object.fromEntries(await tx.scan({ prefix }).entries().toArray()));
}

/** How many mutations the instance has not yet seen confirmed by a pull. */
export async function pendingCount(rep: Replicache<MutatorDefs>): Promise<number> {
  return (await rep.experimentalPendingMutations()).length;
}

/**
 * What the server holds under `prefix`, read with a raw pull by a client group of its own
 * (cookie null: the full client view).
 */
export async function serverData(url: URL, prefix = ''): Promise<Record<string, unknown>> {
  const response = await fetch(new URL('pull', url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: '' },
    body: JSON.stringify({ pullVersion: 1, clientGroupID: uniqueName('observer'), cookie: null, profileID: 'observer', schemaVersion: '' }),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`Observer pull answered ${response.status}: ${text}`);
  const body = JSON.parse(text) as { patch?: Array<{ op: string; key?: string; value?: unknown }> };
  if (!Array.isArray(body.patch)) throw new Error(`Observer pull answered no patch: ${text}`);
  const data: Record<string, unknown> = {};
  for (const op of body.patch) {
    if (op.op === 'clear') for (const key of Object.keys(data)) delete data[key];
    else if (op.op === 'put' && op.key!.startsWith(prefix)) data[op.key!] = op.value;
    else if (op.op === 'del') delete data[op.key!];
  }
  return data;
}

export interface RecordedRequest {
  at: number;
  url: string;
  /** `X-Replicache-RequestID`: `<clientID>-<sessionID>-<n>`. */
  requestID: string | null;
  authorization: string | null;
  body: unknown;
  /** `pending` until answered: a request still in flight is not a failed one. */
  status: number | 'pending' | 'network-error';
  responseText: string;
}

/**
 * Records every request the clients send through the global `fetch` (the default puller and
 * pusher call it at request time), and the answers. {@link restore} puts `fetch` back.
 */
export class FetchRecorder {
  readonly requests: RecordedRequest[] = [];
  readonly #original = globalThis.fetch;

  constructor() {
    const original = this.#original;
    const requests = this.requests;
    globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = input instanceof Request ? input.url : String(input);
      const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
      // The client's default puller and pusher pass a Request, with the body in it.
      let body: unknown = init?.body ?? (input instanceof Request ? await input.clone().text() : undefined);
      if (typeof body === 'string') {
        try {
          body = JSON.parse(body);
        } catch {
          // Keep the text.
        }
      }
      const entry: RecordedRequest = {
        at: Date.now(),
        url,
        requestID: headers.get('x-replicache-requestid'),
        authorization: headers.get('authorization'),
        body,
        status: 'pending',
        responseText: '',
      };
      requests.push(entry);
      let response: Response;
      try {
        response = await original(input, init);
      } catch (error) {
        entry.status = 'network-error';
        throw error;
      }
      entry.status = response.status;
      entry.responseText = await response.clone().text();
      return response;
    };
  }

  /** Requests sent by one client instance (matched by the request ID's clientID prefix). */
  from(clientID: string): RecordedRequest[] {
    return this.requests.filter((request) => request.requestID?.startsWith(`${clientID}-`));
  }

  restore(): void {
    globalThis.fetch = this.#original;
  }
}
