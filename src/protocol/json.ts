import * as v from 'valibot';

/** Any JSON value, read-only. */
export type JSONValue =
  | null
  | boolean
  | number
  | string
  | readonly JSONValue[]
  | { readonly [key: string]: JSONValue };

/**
 * Any JSON value. Bodies come from `JSON.parse`, so every value in them is JSON already; this
 * schema only gives the field its type.
 */
export const JSONValue = v.custom<JSONValue>(() => true);
