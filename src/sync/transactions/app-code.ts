import { TemporaryError } from '../../base/errors.js';
import type { Mutator, Mutators } from './mutator.js';

/**
 * Running the app's code (a mutator, a view, a backend call's function) for a bounded time
 * (`limits.appCodeMs`), and the errors it ends with: shared by pushes and the backend door, so
 * that neither imports the other.
 */

/**
 * Runs mutators (or a backend's transaction function), rejecting with a
 * {@link MutatorTimeoutError} once one has run `ms` milliseconds. The caller then discards its transaction, so a mutator that wakes up later finds
 * it closed; its promise is abandoned. One timer serves a whole push, however many mutations:
 * when it fires it expires the running mutator if that one is past its time, else waits again.
 */
export class Watchdog {
  readonly #ms: number;
  readonly #expired: (name: string, ms: number) => MutatorTimeoutError;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: { started: number; name: string; expire: (error: Error) => void } | undefined;

  /** `expired` makes the error a call past its time rejects with; default: a mutator's. */
  constructor(ms: number, expired = (name: string, ms: number) => new MutatorTimeoutError(name, ms)) {
    this.#ms = ms;
    this.#expired = expired;
  }

  /** Calls `call`, named `name` in a timeout's message: undefined when it returned without a promise. */
  run(name: string, call: () => unknown): Promise<void> | undefined {
    const result = call();
    // A mutator that returned without a promise has finished; most never need the timer.
    if (!isThenable(result)) return undefined;
    if (!(this.#ms < Infinity)) return Promise.resolve(result).then(() => {});
    return new Promise<void>((resolve, reject) => {
      const running = { started: performance.now(), name, expire: reject };
      this.#running = running;
      this.#arm(this.#ms);
      const settle = (ok: boolean) => (error?: unknown) => {
        if (this.#running === running) this.#running = undefined;
        if (ok) resolve();
        else reject(error);
      };
      result.then(settle(true), settle(false));
    });
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(delay: number): void {
    this.#timer ??= setTimeout(() => this.#fire(), delay);
  }

  #fire(): void {
    this.#timer = undefined;
    const running = this.#running;
    if (running === undefined) return;
    const left = running.started + this.#ms - performance.now();
    if (left > 0) {
      this.#arm(left);
      return;
    }
    this.#running = undefined;
    running.expire(this.#expired(running.name, this.#ms));
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}

/** The mutator registered as `name` (an own property: never `toString` or `__proto__`). */
export function mutatorNamed(mutators: Mutators, name: string): Mutator {
  const mutator = Object.hasOwn(mutators, name) ? mutators[name] : undefined;
  if (mutator === undefined) throw new UnknownMutatorError(name);
  return mutator;
}

/** A push named a mutator the server does not have. */
export class UnknownMutatorError extends Error {
  override name = 'UnknownMutatorError';
  constructor(name: string) {
    super(`No mutator is named ${JSON.stringify(name)}`);
  }
}

/**
 * A mutator ran past `limits.appCodeMs`. It stops its push like a `TemporaryError` (503 with
 * `Retry-After`): its writes are discarded and its client sends it again later. A backend call
 * (`transact`, `mutate`, `read`) past its `timeoutMs` rejects with one too.
 */
export class MutatorTimeoutError extends TemporaryError {
  override name = 'MutatorTimeoutError';
  constructor(
    mutatorName: string,
    ms: number,
    message = `Mutator ${JSON.stringify(mutatorName)} ran longer than ${ms} ms (limits.appCodeMs); its writes were discarded`,
  ) {
    super(message, {
      retryAfterSeconds: Math.max(1, Math.ceil(ms / 1000)),
    });
  }
}
