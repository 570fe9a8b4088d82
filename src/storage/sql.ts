// What the SQL stores share: safe identifiers, and keys as text that keeps their order.

/**
 * Keys as SQL text that keeps their order. Some databases cannot hold U+0000 in text
 * (PostgreSQL refuses it; Deno's `node:sqlite` cuts a string read back at it), so U+0000 is
 * written as U+0001 U+0001 and U+0001 as U+0001 U+0002. Both are one byte in UTF-8 and every other
 * byte is above them, so byte order and prefixes are kept: `a < b` exactly when
 * `toTextKey(a) < toTextKey(b)`, and `toTextKey(p)` starts `toTextKey(k)` exactly when `p` starts `k`.
 */
export function toTextKey(key: string): string {
  return LOW.test(key) ? key.replace(LOW_ALL, (c) => (c === '\u0000' ? '\u0001\u0001' : '\u0001\u0002')) : key;
}

/** The key {@link toTextKey} wrote. */
export function fromTextKey(text: string): string {
  return text.includes('\u0001') ? text.replace(ESCAPED, (pair) => (pair === '\u0001\u0001' ? '\u0000' : '\u0001')) : text;
}

const LOW = /[\u0000\u0001]/;
const LOW_ALL = /[\u0000\u0001]/g;
const ESCAPED = /\u0001[\u0001\u0002]/g;

/** A table name as an SQL identifier: letters, digits and `_` only, so no quoting can go wrong. */
export function quoteIdentifier(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(name)) {
    throw new TypeError(`Table name ${JSON.stringify(name)} must be 1 to 63 letters, digits and _, not starting with a digit (see tablePrefix)`);
  }
  return `"${name}"`;
}

/** The least string above every string that starts with `prefix`; none when it is all U+10FFFF. */
export function upperBound(prefix: string): string | undefined {
  const points = Array.from(prefix);
  while (points.length > 0) {
    const last = points.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) return points.join('') + String.fromCodePoint(last === 0xd7ff ? 0xe000 : last + 1);
  }
  return undefined;
}
