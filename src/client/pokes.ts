/** What {@link connectPokes} needs of a client: a `Replicache` instance has it all. */
export interface PokeTarget {
  /** Pulls now (Replicache coalesces calls that come while one is under way). */
  pull(): unknown;
  /** True once the client is closed: the connection then closes too. */
  readonly closed?: boolean;
  /** Sent as the `Authorization` header when set, as the client sends it on pull and push. */
  auth?: string;
  /**
   * Asked for a new `auth` when the server answers 401, as the client asks on pull and push; what
   * it returns becomes `auth`, and the stream is opened again at once (8 times in a row at most).
   */
  readonly getAuth?: (() => string | null | undefined | Promise<string | null | undefined>) | null | undefined;
  /**
   * The client's group, sent as the stream's `clientGroupID`: the server then pokes it for its own
   * pushes and, under a view, only for changes its view depends on.
   */
  readonly clientGroupID?: Promise<string> | string;
}

/** Why a poke stream failed; {@link PokeConnectionOptions.onError} gets one per failure. */
export class PokeStreamError extends Error {
  override name = 'PokeStreamError';
  /** The HTTP status the server answered, or undefined when no answer came (a network error). */
  readonly status: number | undefined;
  /**
   * True when trying again cannot help until something changes (a wrong URL: 404; a refused
   * user: 401 with no new auth, 403): live updates are then off, and pulls run at their interval.
   */
  readonly permanent: boolean;

  constructor(message: string, status: number | undefined, options?: { cause?: unknown }) {
    super(message, options);
    this.status = status;
    this.permanent = status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
  }
}

/** Options for {@link connectPokes}. */
export interface PokeConnectionOptions {
  /** Headers for the stream's request. Default: `Authorization` from `rep.auth` when it is set. */
  headers?: () => HeadersInit | Promise<HeadersInit>;
  /** Milliseconds before the first reconnect; each failure in a row doubles it. Default: 500. */
  minDelayMs?: number;
  /** The longest wait between reconnects, in milliseconds. Default: 10,000. */
  maxDelayMs?: number;
  /**
   * Milliseconds without a byte (a poke or a heartbeat) after which the stream is taken for dead
   * and opened again: a network that drops silently never ends a stream. Default: 45,000
   * (three heartbeats at the server's default).
   */
  idleMs?: number;
  /** The `fetch` to use. Default: the global one. */
  fetch?: typeof fetch;
  /**
   * Told of every failure to open or keep the stream (it is retried either way). Default: one
   * `console.warn` for the first failure that retrying cannot fix ({@link PokeStreamError.permanent}),
   * and nothing for the others (a server restarting, a network going away).
   */
  onError?: (error: PokeStreamError) => void;
}

/** An open {@link connectPokes} connection. */
export interface PokeConnection {
  /** True while a stream is open. */
  readonly connected: boolean;
  /** Stops listening and reconnecting. */
  close(): void;
}

/**
 * Keeps a `Replicache` instance listening to the server's poke stream (`GET …/poke`): it pulls on
 * every poke and on every (re)connect, when pokes may have been missed. A stream that fails or
 * ends is opened again after a growing, jittered delay (at once when the browser comes back
 * online). Uses `fetch`, not `EventSource`, so it can send an `Authorization` header.
 *
 * @example
 * const rep = new Replicache({ name: userID, licenseKey, pushURL: '/sync/push', pullURL: '/sync/pull', mutators });
 * connectPokes(rep, '/sync/poke');
 */
export function connectPokes(rep: PokeTarget, url: string | URL, options: PokeConnectionOptions = {}): PokeConnection {
  const { minDelayMs = 500, maxDelayMs = 10_000, idleMs = 45_000 } = options;
  const fetchStream = options.fetch ?? ((input, init) => fetch(input, init));
  const headers = options.headers ?? ((): HeadersInit => (rep.auth ? { authorization: rep.auth } : {}));
  let everOpened = false;
  const onError = options.onError ?? warnOnce(() => !everOpened);
  const stopped = new AbortController();
  let connected = false;
  /** 401s in a row, each answered by asking `getAuth` and trying again at once. */
  let authRetries = 0;
  let wake: (() => void) | undefined;
  const online = () => wake?.();
  const target = globalThis as {
    addEventListener?: (type: string, listener: () => void) => void;
    removeEventListener?: (type: string, listener: () => void) => void;
  };
  target.addEventListener?.('online', online);

  const done = () => stopped.signal.aborted || rep.closed === true;
  const pull = () => {
    if (done()) return;
    try {
      Promise.resolve(rep.pull()).catch(() => {});
    } catch {
      // A client closing under us; the loop ends at its next check.
    }
  };

  /**
   * Milliseconds to wait before reconnecting, when the last stream ended right after a `retry`
   * field: a server shutting down says when to come back (spread over its clients), rather than
   * have them all reconnect at once.
   */
  let retryHint: number | undefined;

  /** `url`, with the client's group when it has one. */
  const streamURL = async (): Promise<string | URL> => {
    if (rep.clientGroupID === undefined) return url;
    const group = await rep.clientGroupID;
    // Relative URLs stay relative: a page's fetch resolves them against its own.
    const text = String(url);
    return `${text}${text.includes('?') ? '&' : '?'}clientGroupID=${encodeURIComponent(group)}`;
  };

  void (async () => {
    for (let failures = 0; !done(); failures++) {
      const outcome = await listen();
      if (outcome === 'opened') failures = 0;
      connected = false;
      if (done()) break;
      if (outcome === 'reauthenticated') {
        failures--;
        continue;
      }
      await sleep(retryHint ?? Math.min(maxDelayMs, minDelayMs * 2 ** failures) * (0.5 + Math.random() / 2));
    }
    target.removeEventListener?.('online', online);
  })();

  /**
   * One stream, until it ends or fails: `opened` when it was open, `reauthenticated` when a 401
   * got new auth from `getAuth` (try again now), else `failed`.
   */
  async function listen(): Promise<'opened' | 'reauthenticated' | 'failed'> {
    retryHint = undefined;
    let lastRetry: number | undefined;
    const request = new AbortController();
    const abort = () => request.abort();
    stopped.signal.addEventListener('abort', abort);
    let idle: ReturnType<typeof setTimeout> | undefined;
    const alive = () => {
      clearTimeout(idle);
      idle = setTimeout(abort, idleMs);
    };
    let opened = false;
    try {
      alive();
      const response = await fetchStream(await streamURL(), { headers: await headers(), signal: request.signal, cache: 'no-store' });
      if (!response.ok || response.body === null) {
        await response.body?.cancel().catch(() => {});
        if (response.status === 401 && (await reauthenticate())) return 'reauthenticated';
        report(
          new PokeStreamError(
            `The poke stream at ${String(url)} was answered ${response.status}${response.status === 404 ? ' (is this the poke URL?)' : ''}`,
            response.status,
          ),
        );
        return 'failed';
      }
      authRetries = 0;
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      // Lines end in CRLF, LF or CR: a chunk that ends in CR ends a line, and an LF that starts
      // the next chunk is the rest of it.
      let halfCRLF = false;
      for (let next = await reader.read(); !next.done; next = await reader.read()) {
        alive();
        if (!opened) {
          // The server sends its first bytes once it is listening: a pull now misses nothing.
          opened = connected = everOpened = true;
          pull();
        }
        const text: string = halfCRLF && next.value.startsWith('\n') ? next.value.slice(1) : next.value;
        halfCRLF = text.endsWith('\r');
        buffer += text.replace(/\r\n?/g, '\n');
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          // The stream's `open` message needs no pull of its own: its first bytes made one.
          if (/^data(:|$)/m.test(block) && block !== 'data: open') pull();
          const retry = /^retry: ?(\d+)$/m.exec(block);
          lastRetry = retry ? Math.min(Number(retry[1]), maxDelayMs) : undefined;
          buffer = buffer.slice(end + 2);
        }
        if (done()) break;
      }
      retryHint = lastRetry;
      return opened ? 'opened' : 'failed';
    } catch (error) {
      // Closing aborts the request: that is no failure.
      if (!done() && !opened)
        report(
          new PokeStreamError(`The poke stream at ${String(url)} could not be opened: ${error instanceof Error ? error.message : String(error)}`, undefined, {
            cause: error,
          }),
        );
      return opened ? 'opened' : 'failed';
    } finally {
      clearTimeout(idle);
      stopped.signal.removeEventListener('abort', abort);
      request.abort();
    }
  }

  /** After a 401: asks `getAuth` for new auth, as the client does on pull and push. */
  async function reauthenticate(): Promise<boolean> {
    if (typeof rep.getAuth !== 'function' || authRetries >= MAX_AUTH_RETRIES) return false;
    authRetries++;
    try {
      const auth = await rep.getAuth();
      if (typeof auth !== 'string' || done()) return false;
      rep.auth = auth;
      return true;
    } catch {
      return false;
    }
  }

  function report(error: PokeStreamError): void {
    try {
      onError(error);
    } catch {
      // An onError that throws must not end the loop.
    }
  }

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const end = () => (clearTimeout(timer), stopped.signal.removeEventListener('abort', end), (wake = undefined), resolve());
      const timer = setTimeout(end, ms);
      stopped.signal.addEventListener('abort', end);
      wake = end;
    });
  }

  return {
    get connected() {
      return connected && !done();
    },
    close() {
      stopped.abort();
    },
  };
}

/** As many times as the client asks `getAuth` after a 401 before it gives up. */
const MAX_AUTH_RETRIES = 8;

/**
 * The default `onError`: one warning, for the first failure that retrying cannot fix, or for a
 * stream that failed {@link NEVER_OPENED_WARNING} times in a row without ever opening (a wrong
 * host or port fails as a server that is away does, and was silent for ever). A server away
 * after the stream has opened is a deploy or a restart: no warning.
 */
function warnOnce(neverOpened: () => boolean): (error: PokeStreamError) => void {
  let warned = false;
  let failed = 0;
  return (error) => {
    if (warned) return;
    const persistent = !error.permanent && neverOpened() && ++failed >= NEVER_OPENED_WARNING;
    if (!error.permanent && !persistent) return;
    warned = true;
    const what = persistent ? `${error.message} (${failed} tries, and it never opened: is the URL right?)` : error.message;
    console.warn(
      `viewsync: ${what}; live updates are off until it succeeds (retrying), pulls go on at their interval. Pass onError to connectPokes to handle this yourself.`,
    );
  };
}

/** Failures in a row, the stream never open, before the default `onError` warns: about 8 s at the default delays. */
const NEVER_OPENED_WARNING = 5;
