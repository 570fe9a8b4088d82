import { HTTPError } from '../base/errors.js';
import { fitsUTF8 } from '../base/utf8.js';

/**
 * The inspector API's parameters, checked: a query's strings and numbers, and an action's JSON
 * fields. Each wrong one is a 400 naming it; none may be longer than a key may be.
 */

/** Longest a space, key, prefix, user or cursor may be here, in UTF-8 bytes: a key's largest default bound. */
const MAX_TEXT = 4096;

/** A text parameter; `undefined` when absent and not `required`. */
export function text(from: URLSearchParams | Record<string, unknown>, name: string, required: true): string;
export function text(from: URLSearchParams | Record<string, unknown>, name: string, required?: boolean): string | undefined;
export function text(from: URLSearchParams | Record<string, unknown>, name: string, required = false): string | undefined {
  const value = from instanceof URLSearchParams ? (from.get(name) ?? undefined) : from[name];
  if (value === undefined || value === null || value === '') {
    if (required && value !== '') throw new HTTPError(400, `${name} is missing`);
    return value === '' ? '' : undefined;
  }
  if (typeof value !== 'string') throw new HTTPError(400, `${name} must be a string`);
  if (!fitsUTF8(value, MAX_TEXT)) throw new HTTPError(400, `${name} is longer than ${MAX_TEXT} bytes`);
  return value;
}

/** A whole-number parameter from `min` to `max`; `undefined` when absent. */
export function whole(from: URLSearchParams | Record<string, unknown>, name: string, min: number, max: number): number | undefined {
  const raw = from instanceof URLSearchParams ? (from.get(name) ?? undefined) : from[name];
  if (raw === undefined || raw === null || raw === '') return undefined;
  const value = typeof raw === 'string' ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max)
    throw new HTTPError(400, `${name} must be a whole number from ${min} to ${max}`);
  return value;
}

/** A page's length: `limit`, from 1 to 1,000, default `fallback`. */
export function pageLimit(query: URLSearchParams, fallback: number): number {
  return whole(query, 'limit', 1, 1_000) ?? fallback;
}
