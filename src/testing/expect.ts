/**
 * The few assertions the conformance suite makes, in the shape of the test runners' `expect`, so
 * that the suite runs under any runner (vitest, jest, node:test, bun test, Deno.test) or none: a
 * failed assertion throws an `AssertionError` naming both sides.
 */
export function expect<T>(actual: T, message?: string): Matchers<T> {
  const fail = (what: string): never => {
    throw new AssertionError(`${message ? `${message}: ` : ''}expected ${show(actual)} ${what}`);
  };
  return {
    toEqual: (expected) => void (equal(actual, expected) || fail(`to equal ${show(expected)}`)),
    toBe: (expected) => void (Object.is(actual, expected) || fail(`to be ${show(expected)}`)),
    toBeUndefined: () => void (actual === undefined || fail('to be undefined')),
    toBeNull: () => void (actual === null || fail('to be null')),
    toBeLessThanOrEqual: (bound) => void ((actual as number) <= bound || fail(`to be at most ${bound}`)),
    not: { toEqual: (expected) => void (!equal(actual, expected) || fail(`not to equal ${show(expected)}`)) },
    rejects: {
      toBe: async (expected) => {
        const error = await rejection(actual as PromiseLike<unknown>, fail);
        if (!Object.is(error, expected)) fail(`to reject with ${show(expected)}, it rejected with ${show(error)}`);
      },
      toBeInstanceOf: async (type) => {
        const error = await rejection(actual as PromiseLike<unknown>, fail);
        if (!(error instanceof type)) fail(`to reject with a ${type.name}, it rejected with ${show(error)}`);
      },
      toThrow: async (text) => {
        const error = await rejection(actual as PromiseLike<unknown>, fail);
        if (text !== undefined && !String((error as Error)?.message).includes(text))
          fail(`to reject with a message containing ${show(text)}, it rejected with ${show(error)}`);
      },
    },
  };
}

/** What {@link expect} can check. */
export interface Matchers<T> {
  toEqual(expected: unknown): void;
  toBe(expected: T): void;
  toBeUndefined(): void;
  toBeNull(): void;
  toBeLessThanOrEqual(bound: number): void;
  not: { toEqual(expected: unknown): void };
  rejects: {
    toBe(expected: unknown): Promise<void>;
    toBeInstanceOf(type: abstract new (...args: never[]) => unknown): Promise<void>;
    toThrow(text?: string): Promise<void>;
  };
}

/** Thrown when a conformance check fails. */
export class AssertionError extends Error {
  override name = 'AssertionError';
}

async function rejection(promise: PromiseLike<unknown>, fail: (what: string) => never): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return fail('to reject, it resolved');
}

/** Deep equality of JSON-like data; object members that are `undefined` count as absent. */
function equal(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((item, i) => equal(item, (b as unknown[])[i]));
  const defined = (o: object) => Object.keys(o).filter((key) => (o as Record<string, unknown>)[key] !== undefined);
  const [keysA, keysB] = [defined(a), defined(b)];
  return (
    keysA.length === keysB.length &&
    keysA.every((key) => Object.hasOwn(b, key) && equal((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]))
  );
}

function show(value: unknown): string {
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  try {
    const text = JSON.stringify(value, (_, v: unknown) => (v === undefined ? '(undefined)' : v)) ?? String(value);
    return text.length > 300 ? `${text.slice(0, 300)}…` : text;
  } catch {
    return String(value);
  }
}
