/**
 * A gate for holding one piece of work until the test lets it go: a mutator awaits `hold()`,
 * the test awaits `started` to know it is held, queues more work behind it, then `release()`s.
 */
export interface Gate {
  /** Resolves once something awaits `hold()`. */
  started: Promise<void>;
  /** Marks the gate entered, then waits until `release()`. */
  hold(): Promise<void>;
  /** Lets everything waiting in `hold()` go on. */
  release(): void;
}

/** A closed gate. */
export function gate(): Gate {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let enter!: () => void;
  const started = new Promise<void>((resolve) => (enter = resolve));
  return {
    started,
    hold: () => {
      enter();
      return held;
    },
    release,
  };
}
