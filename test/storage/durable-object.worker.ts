import { durableObjectStorage, type DurableObjectStorage } from '../../src/storage/durable-object.js';
import type { Storage } from '../../src/storage/types.js';

/**
 * The Worker that `durable-object.workerd.test.ts` runs beside, in workerd: a Durable Object
 * that only holds a store over its own SQLite storage, for the tests to reach in with
 * `runInDurableObject`.
 */
export class StorageObject {
  readonly storage: Storage;
  readonly state: { storage: DurableObjectStorage };
  #next = 0;
  #waiting = new Map<number, () => void>();

  constructor(state: { storage: DurableObjectStorage }) {
    this.state = state;
    this.storage = durableObjectStorage(state.storage);
  }

  /**
   * Calls `start` once every call numbered below `turn` has called its own. Requests to an object
   * may arrive out of the order they were sent in, while the suite expects transactions to queue
   * in the order it asked for them, as they do when it calls a store directly.
   */
  async inTurn<T>(turn: number, start: () => Promise<T>): Promise<T> {
    if (turn !== this.#next) await new Promise<void>((resolve) => this.#waiting.set(turn, resolve));
    const started = start();
    this.#waiting.get(++this.#next)?.();
    this.#waiting.delete(this.#next);
    return started;
  }

  fetch(): Response {
    return new Response(null, { status: 404 });
  }
}

export default { fetch: (): Response => new Response(null, { status: 404 }) };
