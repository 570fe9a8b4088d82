/**
 * A TCP proxy on loopback that a test controls, put between a process and its database to break
 * the network between them on purpose: cut every connection at once (both ends reset, as a
 * switch that dies), stall them (bytes held both ways, as a link that stops answering), refuse
 * new ones, point new ones elsewhere (a failover's moved address), and, for PostgreSQL, end a
 * connection with a FATAL sent in the same read as its first ReadyForQuery (a backend terminated
 * just as the pool hands the connection out).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface FaultProxy {
  /** The port it listens on, on 127.0.0.1. */
  readonly port: number;
  /** `url` (a postgres:// URL, or any URL) with its host and port replaced by the proxy's. */
  url(url: string): string;
  /** Connections through it now. */
  readonly open: number;
  /** Connections it has taken in all. */
  readonly accepted: number;
  /** Resets every connection open now, both sides; new ones pass. */
  cut(): void;
  /** Holds every byte, both ways, of open and new connections, until {@link resume}. */
  stall(): void;
  resume(): void;
  /**
   * The next connection a client sends anything on, from now on: all it sends after its first
   * `passing` writes (default 0) is dropped, and the connection kept open, as a driver that lost
   * track of a statement and never sends its rest (the server waits for it, for ever).
   */
  swallowNext(passing?: number): void;
  /** Cancels a {@link swallowNext} no connection has met yet. */
  swallowNone(): void;
  /** The ports the proxy's connections to the server use (its `client_port`), of connections open now that lose what is sent. */
  readonly swallowing: number[];
  /** Resets new connections as they come, until {@link accept}. */
  refuse(): void;
  accept(): void;
  /** Sends new connections to `port` on 127.0.0.1 from now on (open ones stay where they are). */
  retarget(port: number): void;
  /**
   * PostgreSQL: the next `count` connections get, right behind the server's first ReadyForQuery
   * and in the same write, an ErrorResponse FATAL 57P01 ("terminating connection due to
   * administrator command"), and are then closed, as a backend killed as it starts up.
   */
  fatalAtReady(count: number): void;
  close(): Promise<void>;
}

/** Starts a proxy to `targetPort` on 127.0.0.1. */
export async function startFaultProxy(targetPort: number): Promise<FaultProxy> {
  let target = targetPort;
  let stalled = false;
  let refusing = false;
  let swallowing: number | undefined;
  let fatals = 0;
  let accepted = 0;
  const pairs = new Set<Pair>();

  const server: Server = createServer((client) => {
    accepted++;
    if (refusing) return void client.resetAndDestroy();
    const upstream = connect(target, '127.0.0.1');
    const pair: Pair = { client, upstream, held: [] };
    pairs.add(pair);
    const fatal = fatals > 0 ? (fatals--, new FatalAtReady()) : undefined;
    let ending = false;
    const drop = () => {
      pairs.delete(pair);
      // A FATAL on its way: the client's end flushes it, then closes.
      if (!ending) client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.on('data', (chunk: Buffer) => forward(pair, upstream, chunk, () => fatal?.clientSent(chunk)));
    upstream.on('data', (chunk: Buffer) => {
      if (fatal === undefined) return forward(pair, client, chunk);
      const cut = fatal.serverSent(chunk);
      if (cut === undefined) return forward(pair, client, chunk);
      // One write: the ReadyForQuery and the FATAL reach the client in one read.
      ending = true;
      client.end(Buffer.concat([chunk.subarray(0, cut), FATAL_57P01]));
      upstream.destroy();
    });
  });

  const forward = (pair: Pair, to: Socket, chunk: Buffer, before?: () => void) => {
    if (to === pair.upstream && swallowing !== undefined && pair.passing === undefined) [pair.passing, swallowing] = [swallowing, undefined];
    if (to === pair.upstream && pair.passing !== undefined && pair.passing-- <= 0) return;
    before?.();
    if (stalled) pair.held.push(() => to.write(chunk));
    else to.write(chunk);
  };

  const cut = () => {
    for (const { client, upstream } of pairs) {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    }
    pairs.clear();
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url(url) {
      const parsed = new URL(url);
      parsed.hostname = '127.0.0.1';
      parsed.port = String(port);
      return parsed.href;
    },
    get open() {
      return pairs.size;
    },
    get accepted() {
      return accepted;
    },
    cut,
    stall() {
      stalled = true;
    },
    resume() {
      stalled = false;
      for (const pair of pairs) for (const write of pair.held.splice(0)) write();
    },
    swallowNext(passing = 0) {
      swallowing = passing;
    },
    swallowNone() {
      swallowing = undefined;
    },
    get swallowing() {
      return [...pairs].filter((pair) => pair.passing !== undefined).map((pair) => pair.upstream.localPort!);
    },
    refuse() {
      refusing = true;
    },
    accept() {
      refusing = false;
    },
    retarget(next) {
      target = next;
    },
    fatalAtReady(count) {
      fatals += count;
    },
    async close() {
      cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface Pair {
  client: Socket;
  upstream: Socket;
  /** Writes held while the proxy is stalled, in order. */
  held: Array<() => void>;
  /** Once swallowed: how many more writes of the client pass (see {@link FaultProxy.swallowNext}). */
  passing?: number;
}

/**
 * Finds the end of the server's first ReadyForQuery ('Z') in the bytes it sends: messages are a
 * type byte and a 4-byte length, but for the one-byte answer to an SSLRequest (or a
 * GSSENCRequest), which is not framed.
 */
class FatalAtReady {
  #unframed = 0;
  #pending = Buffer.alloc(0);
  #done = false;

  clientSent(chunk: Buffer): void {
    // The client's first bytes: an SSLRequest or GSSENCRequest is 8 bytes, code 80877103 / 80877104.
    if (chunk.length >= 8 && chunk.readInt32BE(0) === 8 && [80877103, 80877104].includes(chunk.readInt32BE(4))) this.#unframed++;
  }

  /** Where, in `chunk`, the first ReadyForQuery ends, if it does in it. */
  serverSent(chunk: Buffer): number | undefined {
    if (this.#done) return undefined;
    const before = this.#pending.length;
    const bytes = Buffer.concat([this.#pending, chunk]);
    let at = 0;
    for (; this.#unframed > 0 && at < bytes.length; this.#unframed--) at++;
    while (bytes.length - at >= 5) {
      const type = String.fromCharCode(bytes[at]!);
      const end = at + 1 + bytes.readInt32BE(at + 1);
      if (end > bytes.length) break;
      at = end;
      if (type === 'Z') {
        this.#done = true;
        return at - before;
      }
    }
    this.#pending = bytes.subarray(at);
    return undefined;
  }
}

/** ErrorResponse: severity FATAL, code 57P01, as PostgreSQL sends when `pg_terminate_backend` ends a backend. */
const FATAL_57P01 = (() => {
  const fields = Buffer.concat([
    ...[
      ['S', 'FATAL'],
      ['V', 'FATAL'],
      ['C', '57P01'],
      ['M', 'terminating connection due to administrator command'],
    ].map(([tag, text]) => Buffer.from(`${tag}${text}\0`, 'utf8')),
    Buffer.from([0]),
  ]);
  const header = Buffer.alloc(5);
  header.write('E', 0);
  header.writeInt32BE(4 + fields.length, 1);
  return Buffer.concat([header, fields]);
})();
