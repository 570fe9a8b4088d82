import type { Storage } from '../storage/types.js';

/**
 * How a server hears that a space changed, wherever the change was made: the seam between
 * pushes and the poke streams. The default, {@link localNotifier}, reaches the streams of one
 * process; `postgresNotifier` (from `viewsync/postgres`) reaches every instance on one database.
 * A notifier carries the space's name, and may carry what the change touched to the streams of
 * its own process: clients learn what changed by pulling.
 */
export interface Notifier {
  /**
   * Tells every subscriber of `space`, on every instance this notifier reaches, that it changed;
   * `detail`, when given, is what the change touched, for the subscribers that take it.
   */
  notify(space: string, detail?: ChangeDetail): void | Promise<void>;
  /**
   * Calls `listener` after each change of `space` until the returned function is called, with
   * what the change touched when the notifier knows it (undefined: anything). When it returns (or
   * resolves), no later change is missed: a client that pulls after that learns either from its
   * pull or from a poke.
   */
  subscribe(space: string, listener: (detail?: ChangeDetail) => void): Unsubscribe | Promise<Unsubscribe>;
  /**
   * Optional: calls `listener` with the space's name after each change of any space, until the
   * returned function is called (webhook delivery learns of changes made elsewhere by it,
   * without looking at every space). A notifier without it leaves such changes to the sweep.
   */
  subscribeAll?(listener: (space: string) => void): Unsubscribe | Promise<Unsubscribe>;
}

/**
 * What a committed change touched: the keys it wrote (or deleted) and the client groups whose
 * pushes it holds, so that a poke goes only to the streams it concerns (see the poke hub).
 */
export interface ChangeDetail {
  readonly keys: readonly string[];
  /** The pushing groups, each with its user (undefined: anonymous); none for a backend write. */
  readonly groups: ReadonlyArray<{ readonly userID: string | undefined; readonly clientGroupID: string }>;
}

/** Stops a {@link Notifier.subscribe} subscription. */
export type Unsubscribe = () => void;

/** A notifier of this process only, which can also poke every space it knows. */
export interface LocalNotifier extends Notifier {
  /** {@link Notifier.subscribeAll}, always offered: told of every space `notify` is called for. */
  subscribeAll(listener: (space: string) => void): Unsubscribe;
  /** Spaces with subscribers. */
  readonly spaces: number;
  /** Notifies every space with subscribers: for when changes may have been missed. */
  notifyAll(): void;
}

/** A notifier that reaches the subscribers of this process only. */
export function localNotifier(): LocalNotifier {
  const listeners = new Map<string, Set<(detail?: ChangeDetail) => void>>();
  const everywhere = new Set<(space: string) => void>();
  return {
    notify(space, detail) {
      for (const listener of listeners.get(space) ?? []) {
        try {
          listener(detail);
        } catch {
          // One subscriber's failure must not keep the others unpoked.
        }
      }
      for (const listener of everywhere) {
        try {
          listener(space);
        } catch {
          // As above.
        }
      }
    },
    subscribeAll(listener) {
      const own = (space: string) => listener(space);
      everywhere.add(own);
      return () => void everywhere.delete(own);
    },
    subscribe(space, listener) {
      let set = listeners.get(space);
      if (set === undefined) listeners.set(space, (set = new Set()));
      // A wrapper, so that one listener subscribed twice is two subscriptions.
      const own = (detail?: ChangeDetail) => listener(detail);
      set.add(own);
      return () => {
        set.delete(own);
        if (set.size === 0 && listeners.get(space) === set) listeners.delete(space);
      };
    },
    notifyAll() {
      for (const space of [...listeners.keys()]) this.notify(space);
    },
    get spaces() {
      return listeners.size;
    },
  };
}

const byStorage = new WeakMap<Storage, Notifier>();

/**
 * The notifier a context uses when it names none: one per store, so that every context (and
 * every handler) over the same store in this process pokes the same streams.
 */
export function defaultNotifier(storage: Storage): Notifier {
  let notifier = byStorage.get(storage);
  if (notifier === undefined) byStorage.set(storage, (notifier = localNotifier()));
  return notifier;
}
