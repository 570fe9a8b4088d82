import { within } from '../base/within.js';
import type { Notifier } from './notifier.js';
import { localNotifier } from './notifier.js';

/** A Redis client, node-redis (v4 or later) or ioredis: the part {@link redisNotifier} uses. */
export interface RedisNotifierClient extends RedisEvents {
  /** Sends `message` to every subscriber of `channel`. */
  publish(channel: string, message: string): Promise<unknown>;
  /** A new client with the same options, for subscribing: a subscribed connection can do nothing else. */
  duplicate(): RedisNotifierSubscriber;
  /** node-redis: whether commands can be sent now. */
  readonly isReady?: boolean;
  /** ioredis: the connection's state, `ready` when commands can be sent. */
  readonly status?: string;
}

/** The subscribing client {@link RedisNotifierClient.duplicate} makes: node-redis's or ioredis's. */
export type RedisNotifierSubscriber = NodeRedisSubscriber | IORedisSubscriber;

/** node-redis: messages go to the listener given to `subscribe`, and it never connects by itself. */
interface NodeRedisSubscriber extends RedisEvents {
  subscribe(channel: string, listener: (message: string, channel: string) => unknown): Promise<unknown>;
  connect(): Promise<unknown>;
  disconnect(): unknown;
  readonly status?: undefined;
}

/** ioredis: messages come as `message` events, and it connects by itself unless `lazyConnect` (status `wait`). */
interface IORedisSubscriber extends RedisEvents {
  subscribe(channel: string): Promise<unknown>;
  connect(): Promise<unknown>;
  disconnect(): unknown;
  readonly status: string;
}

/** Events heard: `ready`, `error`, `reconnecting`, `close`, `end`, `terminated` and (ioredis) `message`. */
interface RedisEvents {
  on(event: string, listener: (...args: unknown[]) => unknown): unknown;
  off(event: string, listener: (...args: unknown[]) => unknown): unknown;
}

/** Options for {@link redisNotifier}. */
export interface RedisNotifierOptions {
  /** The pub/sub channel; deployments sharing a Redis but not spaces use one each. Default: `viewsync`. */
  channel?: string;
  /** Milliseconds `subscribe` waits for Redis to confirm the subscription before it fails (a poke stream then gets 503). Default: 10,000. */
  timeoutMs?: number;
  /** Told of failures no caller waits for: the subscribing connection's errors, a lost reconnection. Default: none. */
  onError?: (error: unknown) => void;
}

/**
 * A notifier for server instances that share one Redis, for where no connection can `LISTEN`
 * (serverless, poolers): a change on one instance pokes the streams of its space on every
 * instance, through `PUBLISH` and `SUBSCRIBE` on one channel. One channel, not one per space:
 * opening a space's first stream then costs no round trip and closing its last no `UNSUBSCRIBE`,
 * and every instance hears every space's pokes, which are a few bytes each. The subscription
 * runs on a duplicate of `redis`; when it comes back after a drop, every space with streams here
 * is poked, since messages in between are lost. A notify while `redis` is not connected fails at
 * once rather than waiting in the client's queue, and the next message then pokes every space
 * on the other instances instead of one.
 *
 * @example
 * const redis = await createClient({ url: process.env.REDIS_URL }).on('error', console.error).connect();
 * const ctx = createContext({ storage, mutators, pokes: { notifier: redisNotifier(redis) } });
 */
export function redisNotifier(redis: RedisNotifierClient, options: RedisNotifierOptions = {}): Notifier & { close(): Promise<void> } {
  const channel = options.channel ?? 'viewsync';
  const timeoutMs = options.timeoutMs ?? 10_000;
  const local = localNotifier();
  // Messages say which instance sent them, so that one's own come back to nobody.
  const self = Math.random().toString(36).slice(2, 10);
  const report = (error: unknown) => {
    try {
      options.onError?.(error);
    } catch {
      // The notifier carries on whatever onError does.
    }
  };
  let subscriber: RedisNotifierSubscriber | undefined;
  let live = false;
  let connections = 0;
  let waiters = new Set<(error?: unknown) => void>();
  // A notify failed, so the other instances are owed a poke of every space.
  let owed = false;
  let closed = false;
  let restart: ReturnType<typeof setTimeout> | undefined;

  const onMessage = (message: string) => {
    const [from, space] = parse(message);
    if (from === undefined || from === self) return;
    if (space === undefined) local.notifyAll();
    else local.notify(space);
  };

  const settle = (error?: unknown) => {
    const waiting = waiters;
    waiters = new Set();
    for (const wake of waiting) wake(error);
  };

  /** Forgets `connection` (dropped for good), and starts another while spaces have streams. */
  const drop = (connection: RedisNotifierSubscriber, error: unknown) => {
    if (subscriber !== connection) return;
    subscriber = undefined;
    live = false;
    void quietly(() => connection.disconnect());
    report(error);
    settle(error);
    if (!closed && local.spaces > 0 && restart === undefined) {
      restart = setTimeout(() => {
        restart = undefined;
        if (!closed && subscriber === undefined && local.spaces > 0) start();
      }, 1_000);
      (restart as { unref?: () => void }).unref?.();
    }
  };

  /**
   * Subscribes on each `ready`. node-redis has resubscribed before it says `ready` (our
   * listener is then already there, so nothing is sent); ioredis only has sent its own
   * `SUBSCRIBE`, so ours, answered after it, tells when the subscription is live again.
   */
  const confirm = async (connection: RedisNotifierSubscriber) => {
    try {
      await (connection.status === undefined ? connection.subscribe(channel, onMessage) : connection.subscribe(channel));
    } catch (error) {
      // The connection is down again: its next `ready` tries again.
      report(error);
      return;
    }
    if (subscriber !== connection || live) return;
    live = true;
    if (connections++ > 0) local.notifyAll();
    settle();
  };

  const start = () => {
    const connection = redis.duplicate();
    subscriber = connection;
    const down = () => {
      if (subscriber === connection) live = false;
    };
    const gone = () => drop(connection, new Error(`The Redis connection subscribed to "${channel}" closed and will not reconnect; opening another`));
    connection.on('error', report);
    connection.on('ready', () => void confirm(connection));
    connection.on('reconnecting', down);
    connection.on('close', down);
    connection.on('end', gone);
    connection.on('terminated', gone);
    connection.on('message', (from: unknown, message: unknown) => {
      if (from === channel && typeof message === 'string') onMessage(message);
    });
    // ioredis connects by itself unless `lazyConnect`; node-redis never does.
    if (connection.status === undefined || connection.status === 'wait') {
      void quietly(
        () => connection.connect(),
        (error) => drop(connection, error),
      );
    }
  };

  const waitLive = () => {
    let wake!: (error?: unknown) => void;
    const live = new Promise<void>((resolve, reject) => {
      wake = (error?: unknown) => (error === undefined ? resolve() : reject(error instanceof Error ? error : new Error(String(error))));
      waiters.add(wake);
    });
    return within(live, timeoutMs, () => {
      waiters.delete(wake);
      return new Error(`Redis did not confirm the subscription to "${channel}" within ${timeoutMs} ms; is it reachable? (redisNotifier's timeoutMs)`);
    });
  };

  /** Pays what is owed once `redis` is back, rather than at the next notify. */
  const onPublisherReady = () => {
    if (!owed || closed) return;
    owed = false;
    void quietly(
      () => redis.publish(channel, JSON.stringify([self])),
      (error) => {
        owed = true;
        report(error);
      },
    );
  };
  redis.on('ready', onPublisherReady);

  return {
    async notify(space, detail) {
      // What the change touched goes to this process's streams only: a message carries the name.
      local.notify(space, detail);
      if (!isReady(redis)) {
        owed = true;
        throw new Error(`Redis is not connected: other instances learn of this change of ${JSON.stringify(space)} once it is back (redisNotifier)`);
      }
      // Whatever was owed pokes every space, this one with them.
      const message = JSON.stringify(owed ? [self] : [self, space]);
      owed = false;
      try {
        await redis.publish(channel, message);
      } catch (error) {
        owed = true;
        throw error;
      }
    },
    async subscribe(space, listener) {
      if (closed) throw new Error('This redisNotifier is closed');
      if (!live) {
        if (subscriber === undefined) start();
        await waitLive();
      }
      return local.subscribe(space, listener);
    },
    async close() {
      closed = true;
      clearTimeout(restart);
      redis.off('ready', onPublisherReady);
      const connection = subscriber;
      subscriber = undefined;
      live = false;
      settle(new Error('This redisNotifier is closed'));
      if (connection) await quietly(() => connection.disconnect());
    },
  };
}

/** Whether `client` can send a command now (a client that does not say is taken to). */
function isReady(client: RedisNotifierClient): boolean {
  if (typeof client.isReady === 'boolean') return client.isReady;
  return typeof client.status === 'string' ? client.status === 'ready' : true;
}

/**
 * A message's sender and space (none: every space). JSON, so any name survives, U+0000 and
 * lone surrogates included, which a UTF-8 payload as it is would not carry.
 */
function parse(message: string): [string | undefined, string | undefined] {
  try {
    const value: unknown = JSON.parse(message);
    if (!Array.isArray(value) || typeof value[0] !== 'string') return [undefined, undefined];
    if (value.length === 1) return [value[0], undefined];
    return typeof value[1] === 'string' ? [value[0], value[1]] : [undefined, undefined];
  } catch {
    return [undefined, undefined];
  }
}

/** Runs `fn`, whose failure, thrown or rejected, goes to `failed` (by default nowhere). */
async function quietly(fn: () => unknown, failed: (error: unknown) => void = () => {}): Promise<void> {
  try {
    await fn();
  } catch (error) {
    failed(error);
  }
}
