import type { JSONValue } from '../../protocol/json.js';
import { jsonStringBytes } from '../../base/utf8.js';
import { MAX_VALUE_DEPTH } from './limits.js';
import { setOwn } from '../../base/own.js';

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
  return measuredJSONCopy(value, maxBytes).copy;
}

/** {@link frozenJSONCopy}, and the bytes of its UTF-8 JSON text, which a space's usage counts (quota.ts). */
export function measuredJSONCopy(value: unknown, maxBytes: number): { copy: JSONValue; bytes: number } {
  const walk: Walk = { bytes: 0, path: [], seen: new Set() };
  const copy = copyValue(value, walk);
  if (walk.bytes > maxBytes) {
    throw new RangeError(`The value is larger than the limit of ${maxBytes} bytes of JSON (limits.valueBytes)`);
  }
  return { copy, bytes: walk.bytes };
}

/** What a copy carries down: bytes counted so far, where it is (for messages), and the open parents. */
interface Walk {
  bytes: number;
  path: Array<string | number>;
  seen: Set<object>;
}

function copyValue(value: unknown, walk: Walk): JSONValue {
  switch (typeof value) {
    case 'string':
      walk.bytes += jsonStringBytes(value);
      return value;
    case 'boolean':
      walk.bytes += value ? 4 : 5;
      return value;
    case 'number':
      if (!Number.isFinite(value)) break;
      walk.bytes += String(value).length;
      return value;
    case 'object': {
      if (value === null) {
        walk.bytes += 4;
        return null;
      }
      if (walk.path.length >= MAX_VALUE_DEPTH) throw new RangeError(`${where(walk)} nests deeper than ${MAX_VALUE_DEPTH} levels`);
      if (walk.seen.has(value)) throw new TypeError(`${where(walk)} is part of a cycle, so it is not JSON`);
      walk.seen.add(value);
      let copy: JSONValue;
      if (Array.isArray(value)) {
        // Brackets, and a comma between items.
        walk.bytes += 2 + Math.max(0, value.length - 1);
        const out = new Array<JSONValue>(value.length);
        for (let i = 0; i < value.length; i++) {
          walk.path.push(i);
          out[i] = copyValue(value[i], walk);
          walk.path.pop();
        }
        copy = out;
      } else if (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null) {
        const out: Record<string, JSONValue> = {};
        let members = 0;
        for (const key of Object.keys(value)) {
          const item = (value as Record<string, unknown>)[key];
          if (item === undefined) continue; // as JSON.stringify drops it
          members++;
          walk.bytes += jsonStringBytes(key) + 1; // "key":
          walk.path.push(key);
          const itemCopy = copyValue(item, walk);
          walk.path.pop();
          if (key === '__proto__') setOwn(out, key, itemCopy);
          else out[key] = itemCopy;
        }
        walk.bytes += 2 + Math.max(0, members - 1);
        copy = out;
      } else {
        break;
      }
      walk.seen.delete(value);
      return Object.freeze(copy);
    }
  }
  throw new TypeError(`${where(walk)} is not a JSON value (${describe(value)})`);
}

/** The path to where a walk is, as `value.a[0].b`. */
function where(walk: Walk): string {
  return 'value' + walk.path.map((part) => (typeof part === 'number' ? `[${part}]` : `.${part}`)).join('');
}

function describe(value: unknown): string {
  if (typeof value === 'object' && value !== null) return value.constructor?.name ?? 'object';
  return typeof value === 'number' ? String(value) : typeof value;
}
