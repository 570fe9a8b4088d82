import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareUTF8 } from '../../src/store.js';

const RUNS = Number(process.env.FC_RUNS ?? 200);

/** The reference order: Buffer.compare over UTF-8 bytes, as -1, 0 or 1. */
function byBytes(a: string, b: string): number {
  return Math.sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
}

function sign(a: string, b: string): number {
  return Math.sign(compareUTF8(a, b));
}

/** Characters at the edges of the UTF-8 length classes and of the surrogate ranges, where orders disagree. */
const EDGES = ['\u0000', 'a', '\u007F', '\u0080', '\u07FF', '\u0800', '\uD7FF', '\uE000', '\uFFFD', '\uFFFF', '\u{10000}', '😀', '𝄞', '\u{10FFFF}'];
const edgeString = fc.string({ unit: fc.constantFrom(...EDGES), maxLength: 5 });
/** Any UTF-16 code unit, lone surrogates included, with the range edges made likely. */
const anyUnit = fc.oneof(
  fc.constantFrom('\uD800', '\uDBFF', '\uDC00', '\uDFFF', '\uD7FF', '\uE000', '\uFFFF', 'a'),
  fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)),
);
const utf16String = fc.string({ unit: anyUnit, maxLength: 5 });

describe('compareUTF8', () => {
  it.each([
    ['binary', fc.string({ unit: 'binary' })],
    ['grapheme', fc.string({ unit: 'grapheme' })],
    ['range-edge', edgeString],
  ])('orders any two well-formed %s strings as Buffer.compare orders their UTF-8 bytes', (_, string) => {
    fc.assert(
      fc.property(string, string, (a, b) => sign(a, b) === byBytes(a, b)),
      { numRuns: RUNS },
    );
  });

  it('orders any two well-formed strings with a shared prefix as their UTF-8 bytes', () => {
    // Random strings mostly differ at their first unit; a shared prefix moves the difference inward.
    const string = fc.string({ unit: 'binary', maxLength: 4 });
    fc.assert(
      fc.property(string, edgeString, edgeString, (prefix, a, b) => sign(prefix + a, prefix + b) === byBytes(prefix + a, prefix + b)),
      { numRuns: RUNS },
    );
  });

  it('is zero exactly for equal strings and antisymmetric, for any UTF-16 strings, lone surrogates included', () => {
    fc.assert(
      fc.property(utf16String, utf16String, (a, b) => (sign(a, b) === 0) === (a === b) && sign(a, b) === -sign(b, a) && sign(a, a) === 0),
      { numRuns: RUNS },
    );
  });

  it('is a total order on any UTF-16 strings, lone surrogates included: sorting with it leaves every pair in order', () => {
    fc.assert(
      fc.property(fc.array(utf16String, { minLength: 2, maxLength: 12 }), (strings) => {
        const sorted = [...strings].sort(compareUTF8);
        for (let i = 0; i < sorted.length; i++) {
          for (let j = i + 1; j < sorted.length; j++) if (compareUTF8(sorted[i]!, sorted[j]!) > 0) return false;
        }
        return true;
      }),
      { numRuns: RUNS },
    );
  });

  it.each([
    ['\uFFFF', '😀'],
    ['\uFFFD', '𝄞'],
    ['\uE000', '\u{10000}'],
    ['a\uFFFF', 'a😀'],
    ['\uFFFFz', '😀'],
    ['𝄞', '😀'],
    ['😀', '😀a'],
    ['😀', '😁'],
    ['\uD7FF', '\uE000'],
    ['\u007F', '\u0080'],
    ['\u07FF', '\u0800'],
    ['', '\u0000'],
    ['a', 'ab'],
    ['Z', 'a'],
  ])('%j sorts before %j, as their UTF-8 bytes do', (a, b) => {
    expect(byBytes(a, b)).toBe(-1);
    expect(sign(a, b)).toBe(-1);
    expect(sign(b, a)).toBe(1);
  });

  it('disagrees with UTF-16 order exactly where a surrogate pair meets U+E000-U+FFFF', () => {
    expect('😀' < '\uFFFF').toBe(true);
    expect(sign('😀', '\uFFFF')).toBe(1);
    expect(sign('😀', '😀')).toBe(0);
    expect(sign('abc', 'abc')).toBe(0);
  });
});
