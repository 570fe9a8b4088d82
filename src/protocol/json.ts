import * as v from 'valibot';
import { hasLoneSurrogate } from '../base/utf8.js';

/**
 * Any JSON value, read-only. An object member may be `undefined`, which JSON drops, as in the
 * client's `ReadonlyJSONValue`, so values typed for the client type-check here too.
 */
export type JSONValue = null | boolean | number | string | readonly JSONValue[] | { readonly [key: string]: JSONValue | undefined };

/**
 * Any JSON value. Bodies come from `JSON.parse`, so every value in them is JSON already; this
 * schema only gives the field its type. Its input is typed `unknown`: inferring a recursive input
 * type through `v.optional` is too deep for TypeScript in the declarations users compile.
 */
export const JSONValue: v.GenericSchema<unknown, JSONValue> = v.custom<JSONValue>(() => true);

/**
 * A string with no lone surrogate. IDs become storage keys, which order by UTF-8 bytes, and half
 * a surrogate pair has no UTF-8 form.
 */
export const WellFormedString = v.pipe(
  v.string(),
  v.check((s) => !hasLoneSurrogate(s), 'Expected a well-formed string (it holds a lone surrogate)'),
);
