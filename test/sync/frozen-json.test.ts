import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { frozenJSONCopy } from '../../src/sync/transactions/frozen-json.js';
import { fitsUTF8, jsonStringBytes, utf8Length } from '../../src/base/utf8.js';

const RUNS = Number(process.env.FC_RUNS ?? 2000);
const bytesOf = (text: string) => new TextEncoder().encode(text).length;
/** One unit of any kind: a pair, a lone surrogate, a control character, a quote, any character. */
const unit = fc.oneof(
  fc.constantFrom('"', '\\', '\n', '\b', '\u0000', '\u001f', '\u007f', '\u2028', '\ud800', '\udc00', '😀'),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
);
const anyString = fc.string({ unit });
const anyJSON = fc.jsonValue({ stringUnit: unit, depthSize: 'small' });

describe('the size of a value is its UTF-8 JSON, counted exactly', () => {
  it('jsonStringBytes(s) is the UTF-8 length of JSON.stringify(s), for any string', () => {
    fc.assert(
      fc.property(anyString, (text) => jsonStringBytes(text) === bytesOf(JSON.stringify(text))),
      { numRuns: RUNS },
    );
  });

  it('utf8Length(s) is the UTF-8 length of any well-formed string, and fitsUTF8 agrees with it', () => {
    const wellFormed = fc.string({ unit: 'grapheme' });
    fc.assert(
      fc.property(wellFormed, fc.nat(64), (text, max) => utf8Length(text) === bytesOf(text) && fitsUTF8(text, max) === bytesOf(text) <= max),
      { numRuns: RUNS },
    );
  });

  it('any JSON value is accepted at exactly its UTF-8 JSON size and refused one byte below', () => {
    fc.assert(
      fc.property(anyJSON, (value) => {
        const size = bytesOf(JSON.stringify(value));
        expect(frozenJSONCopy(value, size)).toEqual(value);
        expect(() => frozenJSONCopy(value, size - 1)).toThrow(RangeError);
      }),
      { numRuns: RUNS },
    );
  });

  it('members that are undefined count as JSON drops them', () => {
    const value = { a: 1, gone: undefined, b: [true, null] };
    expect(frozenJSONCopy(value, bytesOf(JSON.stringify(value)))).toEqual({ a: 1, b: [true, null] });
  });
});
