/**
 * Where a space lives until it is moved: `'hash'`, or a function of the space's name that
 * returns one of the stores' names.
 */
export type Placement = 'hash' | ((space: string) => string);

/** `placement` as a function, checked: a function's answer must name one of `names`. */
export function placementOf(placement: Placement, names: readonly string[]): (space: string) => string {
  if (placement === 'hash') return (space) => rendezvous(space, names);
  if (typeof placement !== 'function')
    throw new TypeError(`routedStorage: options.place must be 'hash' or a function of the space, got ${JSON.stringify(placement)}`);
  const known = new Set(names);
  return (space) => {
    const name = placement(space);
    if (!known.has(name))
      throw new Error(
        `routedStorage: options.place put space ${JSON.stringify(space)} in ${JSON.stringify(name)}, which is not one of options.stores (${names.join(', ')})`,
      );
    return name;
  };
}

/**
 * Rendezvous (highest random weight) hashing: the store whose hash with the space is highest.
 * Unlike a hash modulo the count, adding a store takes spaces only to the new one, about one in
 * (N + 1) of them, and leaves the rest where they are.
 */
export function rendezvous(space: string, names: readonly string[]): string {
  let best = names[0]!;
  let bestWeight = -1;
  for (const name of names) {
    const weight = fnv1a(`${name}\u0000${space}`);
    if (weight > bestWeight || (weight === bestWeight && name < best)) [best, bestWeight] = [name, weight];
  }
  return best;
}

/** FNV-1a over UTF-16 code units, then a final mix (the low bits of plain FNV-1a spread poorly). */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  return hash >>> 0;
}
