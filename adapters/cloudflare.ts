import { createContext, handleRequest, type SyncContext, type SyncOptions } from '../src/index.js';
import { durableObjectStorage, type DurableObjectStorage } from '../src/storage/durable-object.js';
import { checkContext } from '../src/context/state.js';

export { durableObjectStorage, type DurableObjectStorage } from '../src/storage/durable-object.js';

/**
 * A Worker serving both endpoints with a context, or with one made from the options `env` gives
 * (with `createContext`, once per `env`: the context's state lives as long as the isolate's env).
 *
 * @example
 * export default createWorker((env: Env) => ({ storage: myStorage(env.DB), mutators }));
 */
export function createWorker<TEnv extends object>(ctx: SyncContext | ((env: TEnv) => SyncOptions)): { fetch(request: Request, env: TEnv): Promise<Response> } {
  if (typeof ctx !== 'function') checkContext(ctx);
  const built = new WeakMap<TEnv, SyncContext>();
  return {
    fetch(request, env) {
      if (typeof ctx !== 'function') return handleRequest(request, ctx);
      let context = built.get(env);
      if (context === undefined) built.set(env, (context = createContext(ctx(env))));
      return handleRequest(request, context);
    },
  };
}

/**
 * A Durable Object class serving one space per object from the object's own SQLite storage:
 * export it from the Worker, declare it in `new_sqlite_classes`, and route with {@link routeToObject}.
 *
 * @example
 * export const SyncObject = createSyncObject((env: Env) => ({ mutators, authenticate }));
 */
export function createSyncObject<TEnv>(
  init: (env: TEnv) => Omit<SyncOptions, 'storage'>,
): new (
  state: { storage: DurableObjectStorage },
  env: TEnv,
) => { fetch(request: Request): Promise<Response> } {
  return class SyncObject {
    readonly #ctx: SyncContext;
    constructor(state: { storage: DurableObjectStorage }, env: TEnv) {
      this.#ctx = createContext({ ...init(env), storage: durableObjectStorage(state.storage) });
    }
    fetch(request: Request): Promise<Response> {
      return handleRequest(request, this.#ctx);
    }
  };
}

/**
 * A Worker that sends each request to the Durable Object named `space(request)` in the
 * namespace bound as `binding`: one object per space.
 *
 * @example
 * export default routeToObject({ binding: 'SYNC', space: (request) => new URL(request.url).searchParams.get('space') ?? 'main' });
 */
export function routeToObject<TBinding extends string>(
  options: RouteOptions<TBinding>,
): { fetch(request: Request, env: Record<TBinding, DurableObjectNamespace>): Promise<Response> } {
  return {
    async fetch(request, env) {
      const namespace = env[options.binding];
      return namespace.get(namespace.idFromName(await options.space(request))).fetch(request);
    },
  };
}

/** Where {@link routeToObject} sends a request. */
export interface RouteOptions<TBinding extends string> {
  /** The name of the Durable Object namespace binding in `env`, as in the Wrangler config. */
  binding: TBinding;
  /** The space the request syncs, which names its object; throwing fails the request. */
  space: (request: Request) => string | Promise<string>;
}

/** The parts of a Durable Object namespace binding that {@link routeToObject} uses. */
export interface DurableObjectNamespace {
  /** The ID of the object with this name. */
  idFromName(name: string): unknown;
  /** A stub forwarding requests to the object with this ID. */
  get(id: unknown): { fetch(request: Request): Promise<Response> };
}
