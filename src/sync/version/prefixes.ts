import { compareUTF8, fitsUTF8, hasLoneSurrogate } from '../../base/utf8.js';

/**
 * A view's key prefixes in their canonical form, as a view record keeps them and a cookie names
 * them: what the version layer reads a view by. The app's view function is in ../view.ts.
 */

/** The bounds a view's answer is held to (`limits.keyBytes` and `limits.viewPrefixes`, see limits.ts). */
export interface ViewBounds {
  readonly keyBytes: number;
  readonly viewPrefixes: number;
}

/**
 * Whether `prefix` covers `key` (or all a prefix `key` covers): `key` starts with it at a segment
 * boundary. Clients choose IDs, so a prefix that merely starts a key (`list/a` of `list/ab`)
 * must not be enough: it would expose another list to whoever picks such an ID.
 */
export function coversKey(prefix: string, key: string): boolean {
  return prefix === '' || (key.startsWith(prefix) && (key.length === prefix.length || prefix.endsWith('/') || key.charCodeAt(prefix.length) === SLASH));
}

/**
 * A set of key prefixes in its one canonical form: sorted by UTF-8 bytes, each once, none
 * covering another (`a/` makes `a/b/` say nothing more). Two views cover the same keys
 * exactly when their forms are equal, which is what lets a view be named by its contents.
 */
export class Prefixes {
  readonly list: readonly string[];
  readonly #set: ReadonlySet<string>;

  private constructor(list: readonly string[]) {
    this.list = list;
    this.#set = new Set(list);
  }

  /** The canonical form of what a view returned; throws on a prefix no key could start with. */
  static async of(source: Iterable<string> | AsyncIterable<string>, limits: ViewBounds): Promise<Prefixes> {
    if (source === null || typeof source !== 'object' || (!(Symbol.iterator in source) && !(Symbol.asyncIterator in source))) {
      throw new TypeError(`view must return an iterable of key prefixes, got ${source === null ? 'null' : typeof source}`);
    }
    const all: string[] = [];
    const add = (prefix: unknown) => {
      if (typeof prefix !== 'string') throw new TypeError(`view returned a prefix that is not a string: ${prefix === null ? 'null' : typeof prefix}`);
      if (hasLoneSurrogate(prefix)) throw new TypeError(`view returned the prefix ${JSON.stringify(prefix.slice(0, 100))}, which holds a lone surrogate`);
      if (!fitsUTF8(prefix, limits.keyBytes))
        throw new RangeError(`view returned a prefix longer than a key may be (limits.keyBytes, ${limits.keyBytes} bytes)`);
      if (all.push(prefix) > limits.viewPrefixes) throw new RangeError(`view returned more than ${limits.viewPrefixes} prefixes (limits.viewPrefixes)`);
    };
    // An array (the usual answer) without an await per prefix.
    if (Symbol.iterator in source) for (const prefix of source as Iterable<unknown>) add(prefix);
    else for await (const prefix of source as AsyncIterable<unknown>) add(prefix);
    return Prefixes.canonical(all);
  }

  /** The canonical form of `prefixes`, trusted to be valid (read back from a view record). */
  static canonical(prefixes: readonly string[]): Prefixes {
    const all = new Set(prefixes);
    const kept = [...all].filter((prefix) => !coveredByAnother(all, prefix)).sort(compareUTF8);
    return new Prefixes(kept);
  }

  static readonly none = new Prefixes([]);

  /** Whether some prefix of the set covers `key` (or a prefix, taken as the keys it covers). */
  covers(key: string): boolean {
    // Only `''`, the key itself and the key cut at each `/` (with it or without it) can cover it.
    const set = this.#set;
    if (set.size === 0) return false;
    if (set.has('') || set.has(key)) return true;
    for (let slash = key.indexOf('/'); slash >= 0; slash = key.indexOf('/', slash + 1)) {
      if (set.has(key.slice(0, slash)) || set.has(key.slice(0, slash + 1))) return true;
    }
    return false;
  }

  /**
   * The regions of this set that `other` does not cover: each prefix of this set that `other`
   * does not cover, with the prefixes of `other` inside it, whose keys are not in the region.
   */
  minus(other: Prefixes): Array<{ prefix: string; except: Prefixes }> {
    const regions: Array<{ prefix: string; except: Prefixes }> = [];
    for (const prefix of this.list) if (!other.covers(prefix)) regions.push({ prefix, except: new Prefixes(other.#inside(prefix)) });
    return regions;
  }

  /** The keys both sets cover, as a set of prefixes. */
  intersect(other: Prefixes): Prefixes {
    const both: string[] = [];
    for (const prefix of this.list) both.push(...(other.covers(prefix) ? [prefix] : other.#inside(prefix)));
    return Prefixes.canonical(both);
  }

  /** The prefixes of this set that `prefix` covers (and so lie inside it), in order. */
  #inside(prefix: string): string[] {
    // Whatever starts with `prefix` sorts in one run from where `prefix` would be.
    const inside: string[] = [];
    for (let i = this.#firstAtOrAfter(prefix); i < this.list.length && this.list[i]!.startsWith(prefix); i++) {
      if (coversKey(prefix, this.list[i]!)) inside.push(this.list[i]!);
    }
    return inside;
  }

  /** The index of the least prefix at or after `key` (the list's length when none is). */
  #firstAtOrAfter(key: string): number {
    let low = 0;
    let high = this.list.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compareUTF8(this.list[middle]!, key) < 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}

/** Whether a prefix of `all` other than `prefix` covers it. */
function coveredByAnother(all: ReadonlySet<string>, prefix: string): boolean {
  if (prefix !== '' && all.has('')) return true;
  for (let slash = prefix.indexOf('/'); slash >= 0; slash = prefix.indexOf('/', slash + 1)) {
    const bare = prefix.slice(0, slash);
    const ended = prefix.slice(0, slash + 1);
    if ((bare !== prefix && all.has(bare)) || (ended !== prefix && all.has(ended))) return true;
  }
  return false;
}

const SLASH = 0x2f;

/**
 * The rule a view record's prefixes follow (`ViewRecord.rule`): segments ({@link coversKey}).
 * Before it, a prefix covered any key it started; such a record's client may hold keys the rule
 * now leaves out, so its cookie gets a reset.
 */
export const RULE = 'segments';
/** The longest view name a cookie may carry; longer is not one of ours. */
export const VIEW_ID_LENGTH = 22;
