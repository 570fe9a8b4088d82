import { remember } from '../base/remember.js';
import type { ViewInterest } from '../sync/interest.js';

/**
 * What each client group's last pull under a view depends on, by space, user and group: a change
 * pokes the group's streams only when it touches that (or the group pushed it). What is not known
 * (no pull ended here yet, pulls under way, one forgotten) pokes the group for every change.
 */
export class GroupInterests {
  readonly #interests = new Map<string, Interest>();

  /**
   * Marks a pull of `user`'s `group` under way; call what it returns with what its answer depends
   * on (undefined: it failed, or there was none to tell). Until then, and while another pull of
   * the group is under way, the group is concerned by every change: one committed after the pull
   * read may touch what only its new view covers.
   */
  pulling(space: string, user: string | undefined, group: string): (interest?: ViewInterest) => void {
    const key = interestKey(space, user, group);
    const entry = this.#interests.get(key) ?? { pulls: 0, interest: undefined };
    entry.pulls++;
    remember(this.#interests, key, entry, MAX_INTERESTS);
    let done = false;
    return (interest) => {
      if (done) return;
      done = true;
      // Pulls that overlapped may end in any order: the last to end may hold the older view.
      entry.interest = --entry.pulls === 0 && !entry.overlapped ? interest : undefined;
      entry.overlapped = entry.pulls > 0;
    };
  }

  /**
   * The group was poked: its client pulls, maybe through another instance, so what it holds is
   * unknown here until one of its pulls ends here.
   */
  poked(space: string, user: string | undefined, group: string): void {
    this.#interests.delete(interestKey(space, user, group));
  }

  /** Whether a change that touched `keys` concerns the group: true unless its last pull's view is known and misses them all. */
  concerns(space: string, user: string | undefined, group: string, keys: readonly string[]): boolean {
    const entry = this.#interests.get(interestKey(space, user, group));
    if (entry === undefined || entry.pulls > 0 || entry.interest === undefined) return true;
    return keys.some((key) => entry.interest!.concerns(key));
  }
}

/** Client groups whose interest is kept; one forgotten gets every poke until it pulls again. */
const MAX_INTERESTS = 10_000;

/** A client group's last pull under a view: what it depends on, and pulls under way. */
interface Interest {
  pulls: number;
  /** Undefined while unknown: the group's streams get every poke. */
  interest: ViewInterest | undefined;
  /** Another pull ended while this one was under way: the next alone says. */
  overlapped?: boolean;
}

function interestKey(space: string, user: string | undefined, group: string): string {
  return JSON.stringify([space, user ?? null, group]);
}
