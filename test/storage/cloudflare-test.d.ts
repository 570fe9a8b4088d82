/** The little of `@cloudflare/vitest-pool-workers`' test module used here, without Workers types. */
declare module 'cloudflare:test' {
  interface Namespace {
    newUniqueId(): unknown;
    get(id: unknown): unknown;
  }
  /** The bindings of `vitest.config.ts`'s workerd project. */
  export const env: { STORAGE: Namespace };
  /** Runs `callback` inside the object behind `stub`, in its own I/O context. */
  export function runInDurableObject<TObject, TResult>(stub: unknown, callback: (object: TObject) => TResult | Promise<TResult>): Promise<TResult>;
  /** Restarts every Durable Object; their storage stays. */
  export function abortAllDurableObjects(): Promise<void>;
}
