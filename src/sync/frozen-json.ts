import type { JSONValue } from '../protocol/json.js';

/**
 * A deep copy of `value`, frozen, after checking that it is JSON. Copying keeps a mutator's
 * later changes to its own object out of the store; freezing keeps readers (the next mutator,
 * a pull) from changing what the store holds. Throws a `TypeError` naming the first non-JSON
 * part (`undefined`, a function, a non-finite number, a class instance, a cycle).
 */
export function frozenJSONCopy(value: unknown, path = 'value', seen = new Set<object>()): JSONValue {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (Number.isFinite(value)) return value;
      break;
    case 'object': {
      if (value === null) return null;
      if (seen.has(value)) throw new TypeError(`${path} is part of a cycle, so it is not JSON`);
      seen.add(value);
      let copy: JSONValue;
      if (Array.isArray(value)) {
        copy = value.map((item, i) => frozenJSONCopy(item, `${path}[${i}]`, seen));
      } else if (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null) {
        const out: Record<string, JSONValue> = {};
        for (const [key, item] of Object.entries(value)) {
          if (item === undefined) continue; // as JSON.stringify drops it
          // defineProperty, because assigning "__proto__" (a legal JSON key) would set the prototype.
          Object.defineProperty(out, key, { value: frozenJSONCopy(item, `${path}.${key}`, seen), enumerable: true, writable: true, configurable: true });
        }
        copy = out;
      } else {
        break;
      }
      seen.delete(value);
      return Object.freeze(copy);
    }
  }
  throw new TypeError(`${path} is not a JSON value (${describe(value)})`);
}

function describe(value: unknown): string {
  if (typeof value === 'object' && value !== null) return value.constructor?.name ?? 'object';
  return typeof value === 'number' ? String(value) : typeof value;
}
