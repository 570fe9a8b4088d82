/** The "did you mean" of the CLI's options, commands and spaces (src/base/nearest-name.ts). */
import { describe, expect, it } from 'vitest';
import { nearestName } from '../../src/base/nearest-name.js';

describe('nearestName', () => {
  const known = ['json', 'sqlite', 'postgres', 'tombstones', 'client-groups', 'to'];

  it('names the known name within two edits, case aside, or sharing the first four letters', () => {
    expect(nearestName('jsno', known)).toBe('json');
    expect(nearestName('sqlit', known)).toBe('sqlite');
    expect(nearestName('Postgre', known)).toBe('postgres');
    expect(nearestName('tombstone', known)).toBe('tombstones');
    expect(nearestName('client-group-ids', known)).toBe('client-groups');
  });

  it('guesses nothing when nothing is near, and nothing for a hostile length', () => {
    expect(nearestName('bogus', known)).toBeUndefined();
    expect(nearestName('anything', [])).toBeUndefined();
    expect(nearestName(`json${'x'.repeat(10_000)}`, known)).toBeUndefined();
  });
});
