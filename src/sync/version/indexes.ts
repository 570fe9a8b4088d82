import type { JSONValue } from '../../protocol/json.js';

/**
 * An index the server keeps for views, defined as the client defines one (`indexes` in its
 * options): the entries whose keys start with `prefix`, by the string `jsonPointer` points at in
 * their values. A view finds entries by a value of theirs with `tx.scan({indexName, prefix})`
 * (the list a flat `todo/<id>` belongs to, say), with no index entries kept by hand.
 */
export interface IndexDefinition {
  /** Only entries whose keys start with this. Default: every entry. */
  readonly prefix?: string | undefined;
  /** An RFC 6901 JSON Pointer into the value (`/listID`); entries where it names no string are left out. */
  readonly jsonPointer: string;
  /** Accepted for the client's definitions' sake; the server leaves such entries out either way. */
  readonly allowEmpty?: boolean | undefined;
}

/** The indexes a context keeps, by name. */
export type IndexDefinitions = { readonly [name: string]: IndexDefinition };

/**
 * The secondary key of the entry at `key` in `index`, or undefined when it is not in it: its key
 * is outside the prefix, its pointer names no string, or the string holds U+0000 (which ends a
 * secondary key in the index's rows).
 */
export function secondaryOf(index: IndexDefinition, key: string, value: JSONValue): string | undefined {
  if (index.prefix !== undefined && !key.startsWith(index.prefix)) return undefined;
  const found = pointAt(value, index.jsonPointer);
  return typeof found === 'string' && !found.includes('\u0000') ? found : undefined;
}

/** What `pointer` names in `value` (RFC 6901), or undefined. */
function pointAt(value: JSONValue, pointer: string): JSONValue | undefined {
  if (pointer === '') return value;
  let at: JSONValue | undefined = value;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (at === null || typeof at !== 'object') return undefined;
    if (Array.isArray(at)) {
      if (!/^(0|[1-9]\d*)$/.test(token)) return undefined;
      at = at[Number(token)];
    } else {
      const object = at as { readonly [key: string]: JSONValue | undefined };
      at = Object.hasOwn(object, token) ? object[token] : undefined;
    }
  }
  return at;
}

/**
 * Throws a `TypeError` naming what is wrong with `indexes`, as the context checks its options:
 * names that are strings, pointers that are RFC 6901 pointers.
 */
export function checkIndexes(indexes: unknown): asserts indexes is IndexDefinitions {
  if (indexes === null || typeof indexes !== 'object' || Array.isArray(indexes))
    throw new TypeError(`indexes must be an object of index definitions by name, got ${Array.isArray(indexes) ? 'an array' : typeof indexes}`);
  for (const [name, index] of Object.entries(indexes)) {
    const where = `indexes[${JSON.stringify(name)}]`;
    if (name === '') throw new TypeError('indexes: an index needs a name');
    if (index === null || typeof index !== 'object') throw new TypeError(`${where} must be {prefix?, jsonPointer, allowEmpty?}`);
    const { prefix, jsonPointer, allowEmpty, ...rest } = index as Record<string, unknown>;
    const unknown = Object.keys(rest)[0];
    if (unknown !== undefined) throw new TypeError(`${where}.${unknown} is not an option of an index (prefix, jsonPointer, allowEmpty)`);
    if (prefix !== undefined && typeof prefix !== 'string') throw new TypeError(`${where}.prefix must be a string`);
    if (typeof jsonPointer !== 'string' || (jsonPointer !== '' && !jsonPointer.startsWith('/')))
      throw new TypeError(`${where}.jsonPointer must be a JSON Pointer: '' or starting with '/', like '/listID'`);
    if (allowEmpty !== undefined && typeof allowEmpty !== 'boolean') throw new TypeError(`${where}.allowEmpty must be a boolean`);
  }
}

/** How a definition is remembered in a space's meta record: a change of it rebuilds the index. */
export function definitionText(index: IndexDefinition): string {
  return JSON.stringify([index.prefix ?? '', index.jsonPointer]);
}
