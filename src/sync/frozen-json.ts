import type { JSONValue } from '../protocol/json.js';
import { jsonStringBytes, MAX_VALUE_DEPTH } from './limits.js';

/**
 * A deep copy of `value`, frozen, after checking that it is JSON that every pull can serve: at
 * most {@link MAX_VALUE_DEPTH} levels deep and at most `maxBytes` of UTF-8 JSON text, measured
 * exactly while copying. Copying keeps a mutator's later changes to its own object out of the
 * store; freezing keeps readers (the next mutator, a pull) from changing what the store holds.
 * Throws a `TypeError` naming the first part that is not JSON (`undefined`, a function, a
 * non-finite number, a class instance, a cycle), or a `RangeError` for a value too deep or too
 * large.
 */
export function frozenJSONCopy(value: unknown, maxBytes: number): JSONValue {
  const size = { bytes: 0 };
  const copy = copyValue(value, 'value', 0, size, new Set());
  if (size.bytes > maxBytes) {
    throw new RangeError(`The value is larger than the limit of ${maxBytes} bytes of JSON (limits.valueBytes)`);
  }
  return copy;
}

function copyValue(value: unknown, path: string, depth: number, size: { bytes: number }, seen: Set<object>): JSONValue {
  switch (typeof value) {
    case 'string':
      size.bytes += jsonStringBytes(value);
      return value;
    case 'boolean':
      size.bytes += value ? 4 : 5;
      return value;
    case 'number':
      if (!Number.isFinite(value)) break;
      size.bytes += String(value).length;
      return value;
    case 'object': {
      if (value === null) {
        size.bytes += 4;
        return null;
      }
      if (depth >= MAX_VALUE_DEPTH) throw new RangeError(`${path} nests deeper than ${MAX_VALUE_DEPTH} levels`);
      if (seen.has(value)) throw new TypeError(`${path} is part of a cycle, so it is not JSON`);
      seen.add(value);
      let copy: JSONValue;
      if (Array.isArray(value)) {
        // Brackets, and a comma between items.
        size.bytes += 2 + Math.max(0, value.length - 1);
        copy = value.map((item, i) => copyValue(item, `${path}[${i}]`, depth + 1, size, seen));
      } else if (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null) {
        const out: Record<string, JSONValue> = {};
        let members = 0;
        for (const [key, item] of Object.entries(value)) {
          if (item === undefined) continue; // as JSON.stringify drops it
          members++;
          size.bytes += jsonStringBytes(key) + 1; // "key":
          // defineProperty, because assigning "__proto__" (a legal JSON key) would set the prototype.
          Object.defineProperty(out, key, { value: copyValue(item, `${path}.${key}`, depth + 1, size, seen), enumerable: true, writable: true, configurable: true });
        }
        size.bytes += 2 + Math.max(0, members - 1);
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
