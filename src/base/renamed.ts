/**
 * Throws a TypeError naming the new spelling when `options` still uses a name that 0.2 renamed,
 * so that an old option is never silently ignored (an ignored `retention.clientGroups` would
 * fall back to the 30-day default without a word).
 */
export function refuseRenamed(options: object | undefined, where: string, renamed: Record<string, string>): void {
  if (options === undefined || options === null) return;
  for (const [old, now] of Object.entries(renamed)) {
    if (Object.hasOwn(options, old)) {
      throw new TypeError(
        `${where}.${old} was renamed ${where}.${now} in viewsync 0.2 (every duration is in milliseconds and its name ends in Ms); see the changelog`,
      );
    }
  }
}
