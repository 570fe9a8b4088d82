/**
 * The known name `typed` most likely misspells: within two edits, or sharing its first four
 * letters (case aside); `undefined` when none is that near, so a guess is never a stretch.
 */
export function nearestName(typed: string, known: Iterable<string>): string | undefined {
  // A hostile length is worth no guess: the distance costs typed.length x name.length.
  if (typed.length > 200) return undefined;
  const lower = typed.toLowerCase();
  const names = [...known];
  let best: { name: string; distance: number } | undefined;
  for (const name of names) {
    const distance = name.length > 200 ? Infinity : editDistance(lower, name.toLowerCase());
    if (best === undefined || distance < best.distance) best = { name, distance };
  }
  if (best !== undefined && best.distance <= 2) return best.name;
  return names.find((name) => lower.length >= 4 && name.toLowerCase().startsWith(lower.slice(0, 4)));
}

/** Levenshtein's distance: insertions, deletions and replacements from `a` to `b`. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}
