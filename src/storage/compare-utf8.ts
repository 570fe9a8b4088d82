/**
 * Compares two strings by their UTF-8 bytes, as the client's B-tree orders keys.
 *
 * UTF-8 byte order is code point order. JavaScript's `<` compares UTF-16 code units, which agrees
 * with code point order except when a surrogate (U+D800-U+DFFF, half of a character above U+FFFF)
 * meets a unit in U+E000-U+FFFF: the surrogate's character is the larger one, its unit the
 * smaller. Remapping only at the first differing unit keeps the common case a plain loop.
 */
export function compareUTF8(a: string, b: string): number {
  // When either string has no unit at or above U+D800, the first differing units cannot both be
  // there, so the engine's native comparison is already code point order, and several times
  // faster than the loop below.
  if (!HIGH_UNIT.test(a) || !HIGH_UNIT.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = remapHighUnit(x);
      y = remapHighUnit(y);
    }
    return x - y;
  }
  return a.length - b.length;
}

const HIGH_UNIT = /[\ud800-\uffff]/;

/**
 * Whether `text` holds half of a surrogate pair. Such a string has no UTF-8 form, so it cannot
 * be a key (SQLite, for one, would store U+FFFD and merge distinct keys).
 */
export function hasLoneSurrogate(text: string): boolean {
  // In `u` mode a whole pair is one code point and does not match.
  return LONE_SURROGATE.test(text);
}

const LONE_SURROGATE = /\p{Surrogate}/u;

/** Moves surrogates above U+E000-U+FFFF, keeping order within each range. */
function remapHighUnit(unit: number): number {
  return unit < 0xe000 ? unit + 0x2000 : unit - 0x800;
}
