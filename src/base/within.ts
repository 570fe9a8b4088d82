/**
 * `work`, or a rejection with `late()` once `ms` milliseconds have passed, whichever comes
 * first; the timer is cleared either way and never holds a process open. The work itself goes
 * on: the caller abandons it, and a rejection it ends with later is nobody's (never unhandled).
 */
export function within<T>(work: PromiseLike<T>, ms: number, late: () => unknown): Promise<T> {
  const answered = Promise.resolve(work);
  answered.then(undefined, () => {});
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
    (timer as { unref?: () => void }).unref?.();
  });
  return Promise.race([answered, expired]).finally(() => clearTimeout(timer));
}
