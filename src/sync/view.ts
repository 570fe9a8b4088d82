import { base64url } from './version/base64url.js';
import { remember } from '../base/remember.js';
import type { ReadTransaction } from './transactions/transaction.js';
import { type Prefixes, RULE } from './version/prefixes.js';

/** Whose view is asked for. */
export interface ViewRequest {
  /** The authenticated user, or undefined when requests are anonymous. */
  userID: string | undefined;
  /** The pulling client group; in a version 0 pull, which has no groups, the client's ID. */
  clientGroupID: string;
}

/**
 * Which part of a space a user may read: the key prefixes, computed from the space's data as of
 * the pull (a membership entry, say). A prefix covers whole segments of a key: `list/a` covers the
 * key `list/a` and every key under `list/a/`, never `list/ab`; one ending with `/` (`doc/`) covers
 * the keys under it. `''` is the whole space; no prefixes, none of it.
 */
export type View = (tx: ReadTransaction, request: ViewRequest) => Iterable<string> | AsyncIterable<string> | Promise<Iterable<string> | AsyncIterable<string>>;

/**
 * The name of `userID`'s view `prefixes`: a hash of both, so equal views of one user share a
 * record and one user's name never stands for another's view. 128 bits: no two views collide.
 */
export async function viewID(userID: string | undefined, prefixes: Prefixes): Promise<string> {
  // The rule prefixes follow is part of the name: a cookie named under another rule is not believed.
  const text = JSON.stringify([userID ?? null, prefixes.list, RULE]);
  const known = names.get(text);
  if (known !== undefined) return known;
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  const id = base64url(digest.subarray(0, 16));
  // A digest costs a hop to the runtime's crypto; most pulls name a view already named.
  if (text.length <= MEMO_TEXT) remember(names, text, id, MEMO_SIZE);
  return id;
}

const names = new Map<string, string>();

const MEMO_SIZE = 4_096;
const MEMO_TEXT = 2_048;

/**
 * When a process last knew each view record to be in a store (per store, by space and name), so
 * that an up-to-date pull need not read it: its only use is to keep the record from housekeeping,
 * which leaves a record alone for far longer than the refresh interval.
 */
export class RecentViews {
  readonly #byStore = new WeakMap<object, Map<string, number>>();

  get(storage: object, space: string, id: string): number | undefined {
    return this.#byStore.get(storage)?.get(`${id}/${space}`);
  }

  set(storage: object, space: string, id: string, used: number): void {
    let known = this.#byStore.get(storage);
    if (known === undefined) this.#byStore.set(storage, (known = new Map()));
    remember(known, `${id}/${space}`, used, MEMO_SIZE);
  }
}
