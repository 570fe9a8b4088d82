import type { StorageTransaction, StoredValue } from '../storage/types.js';
import { getMany } from '../storage/write-buffer.js';
import { type RouteRecord, routeRecordOf } from './route-record.js';

/**
 * What each transaction of a routed storage checks first: that the store it runs in holds the
 * copy of its space in use, read with its first read so that the check costs no round trip.
 */

/** What a transaction checks of a space's route record in the store it runs in. */
export interface RouteCheck {
  key: string;
  space: string;
  store: string;
  home: string;
  readOnly: boolean;
  now: number;
  /** Set once the record refused this store: every later operation of the transaction fails. */
  refused: Elsewhere | undefined;
}

/** Thrown inside a store's transaction whose copy of the space is not the one to use: the router goes where `record` says. */
export class Elsewhere extends Error {
  override name = 'Elsewhere';
  constructor(readonly record: RouteRecord | undefined) {
    super('This store does not hold the copy of the space in use');
  }
}

/**
 * Throws {@link Elsewhere} unless this store's copy may be used: the one in use (`here`, or no
 * record in the space's home), or one being moved away (`moving`), which reads go on using and
 * writes wait for, until the move's lease runs out; a write after that takes the space back.
 */
export function checkRoute(check: RouteCheck, value: StoredValue | undefined, tx?: StorageTransaction): Promise<void> | void {
  const record = routeRecordOf(value, check.space, check.store);
  if (record?.state === 'moving' && !check.readOnly && check.now >= record.until && tx !== undefined) {
    // The mover is gone (or too slow): this write ends its switch, and its commit will see so.
    return tx.put(check.key, { state: 'here' });
  }
  if (record?.state === 'moving' ? !check.readOnly : !inUseHere(check, record)) throw (check.refused = new Elsewhere(record));
}

/** Whether a store whose record of the space is `record` holds the copy in use. */
export function inUseHere(check: Pick<RouteCheck, 'store' | 'home'>, record: RouteRecord | undefined): boolean {
  return record === undefined ? check.store === check.home : record.state === 'here' || record.state === 'moving';
}

/**
 * A store's transaction, which reads the space's route record with its first read and refuses
 * to go on when the record says the copy in use is elsewhere.
 */
export class RoutedTransaction implements StorageTransaction {
  readonly #tx: StorageTransaction;
  readonly #check: RouteCheck;
  #checked: Promise<void> | undefined;
  readonly getMany: (keys: readonly string[]) => Promise<Array<StoredValue | undefined>>;
  readonly scanText: StorageTransaction['scanText'];
  readonly incarnation: StorageTransaction['incarnation'];

  constructor(tx: StorageTransaction, check: RouteCheck) {
    this.#tx = tx;
    this.#check = check;
    this.getMany = (keys) => this.#read(keys);
    this.scanText = tx.scanText && (async (options) => (await this.#ready(), tx.scanText!(options)));
    this.incarnation = tx.incarnation && (() => tx.incarnation!());
  }

  async get(key: string): Promise<StoredValue | undefined> {
    return (await this.#read([key]))[0];
  }

  async put(key: string, value: StoredValue): Promise<void> {
    await this.#ready();
    return this.#tx.put(key, value);
  }

  async del(key: string): Promise<void> {
    await this.#ready();
    return this.#tx.del(key);
  }

  async scan(options: Parameters<StorageTransaction['scan']>[0]) {
    await this.#ready();
    return this.#tx.scan(options);
  }

  /** Reads `keys`, the route record with them when it has not been read yet. */
  async #read(keys: readonly string[]): Promise<Array<StoredValue | undefined>> {
    const tx = this.#tx;
    const many = (list: readonly string[]) => getMany(tx, list);
    if (this.#checked !== undefined) {
      await this.#checked;
      return many(keys);
    }
    const both = many([this.#check.key, ...keys]);
    this.#checked = both.then(([route]) => checkRoute(this.#check, route, tx));
    await this.#checked;
    return (await both).slice(1);
  }

  #ready(): Promise<void> {
    return (this.#checked ??= this.#tx.get(this.#check.key).then((route) => checkRoute(this.#check, route, this.#tx)));
  }
}
