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

/**
 * Whether `text` is at most `max` bytes in UTF-8. Exact for well-formed strings; a lone
 * surrogate counts three bytes, as the replacement character it would become.
 */
export function fitsUTF8(text: string, max: number): boolean {
  if (text.length > max) return false;
  if (text.length * 3 <= max) return true;
  return utf8Length(text) <= max;
}

/** The length of `text` in UTF-8 bytes. */
export function utf8Length(text: string): number {
  // The native scan is many times faster than the loop, and most text is ASCII.
  if (!NON_ASCII.test(text)) return text.length;
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) continue;
    // A pair's two units are four bytes: count one extra for each unit of the pair.
    bytes += unit < 0x800 ? 1 : unit >= 0xd800 && unit < 0xe000 && isPair(text, i) ? 1 : 2;
  }
  return bytes;
}

/**
 * The length of `JSON.stringify(text)` in UTF-8 bytes: quotes, escapes (`\n`, `\u0001`, and a
 * lone surrogate as `\ud800`) and characters of one to four bytes.
 */
export function jsonStringBytes(text: string): number {
  if (!NEEDS_COUNTING.test(text)) return text.length + 2;
  let bytes = 2;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0x20 && unit < 0x80) bytes += unit === 0x22 || unit === 0x5c ? 2 : 1;
    else if (unit < 0x20) bytes += SHORT_ESCAPES.includes(unit) ? 2 : 6;
    else if (unit < 0x800) bytes += 2;
    else if (unit < 0xd800 || unit >= 0xe000) bytes += 3;
    else bytes += isPair(text, i) ? 2 : 6;
  }
  return bytes;
}

const NON_ASCII = /[^\u0000-\u007f]/;
/** What JSON escapes or spells in more than one byte: anything but printable ASCII, `"` and `\`. */
const NEEDS_COUNTING = /[^\u0020\u0021\u0023-\u005b\u005d-\u007e]/;
/** \b \t \n \f \r */
const SHORT_ESCAPES = [0x08, 0x09, 0x0a, 0x0c, 0x0d];

function isPair(text: string, i: number): boolean {
  const unit = text.charCodeAt(i);
  const other = unit < 0xdc00 ? text.charCodeAt(i + 1) : text.charCodeAt(i - 1);
  return unit < 0xdc00 ? other >= 0xdc00 && other < 0xe000 : other >= 0xd800 && other < 0xdc00;
}
