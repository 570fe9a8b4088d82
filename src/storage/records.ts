import type { StoredValue } from './types.js';

/** `T` if every field of it, all the way down, is JSON: what a store keeps and gives back unchanged. */
export type Storable<T> = T extends null | boolean | number | string | undefined
  ? T
  : T extends bigint | symbol | ((...args: never[]) => unknown)
    ? never
    : T extends readonly (infer TItem)[]
      ? readonly Storable<TItem>[]
      : { readonly [K in keyof T]: Storable<T[K]> };

/** A record as the value a store keeps; a field that is not JSON (a Map, a Date, a function) does not typecheck. */
export function toStored<T>(record: T & Storable<T>): StoredValue {
  // An interface has no index signature, so TypeScript cannot see it as StoredValue; Storable has checked each field instead.
  // biome-ignore lint/plugin/no-double-cast: the one place a record becomes a stored value, checked by Storable above.
  return record as unknown as StoredValue;
}

/** A stored value read back as the record type written under its key (a store returns the JSON it was given). */
export function recordOf<T>(value: StoredValue): T {
  // The key's prefix says which record it holds, and only this code writes under it: nothing to check at run time.
  // biome-ignore lint/plugin/no-double-cast: the one place a stored value becomes a record, by the key it was read from.
  return value as unknown as T;
}
