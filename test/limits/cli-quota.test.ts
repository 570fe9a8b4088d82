import { describe, expect, it } from 'vitest';
import { quotaCell, quotaOption } from '../../src/cli/quota.js';

// The CLI's quota flags (`viewsync inspect --quota-entries N --quota-bytes SIZE`); the command
// itself runs in test/cli (end to end, on the packed package).

describe('viewsync inspect --quota-*', () => {
  it('reads a count and a size with its unit, and refuses what it cannot read', () => {
    expect(quotaOption(undefined, undefined)).toBeUndefined();
    expect(quotaOption('1000', '10MiB')).toEqual({ entries: 1000, bytes: 10 * 1024 * 1024 });
    expect(quotaOption(undefined, '1.5 kB')).toEqual({ bytes: 1500 });
    expect(quotaOption(undefined, '1MiB', '4MiB')).toEqual({ bytes: 1024 * 1024, historyBytes: 4 * 1024 * 1024 });
    expect(() => quotaOption(undefined, undefined, 'lots')).toThrow(/--quota-history-bytes takes a size/);
    expect(() => quotaOption('1e3', undefined)).toThrow(/--quota-entries takes a whole number/);
    expect(() => quotaOption(undefined, '10 parsecs')).toThrow(/--quota-bytes takes a size/);
  });

  it('shows the share of each bound a space uses', () => {
    const size = (bytes: number) => `${bytes} B`;
    expect(quotaCell({ entries: 450, bytes: 50, history: 20, quota: { entries: 1000, bytes: 100 } }, size)).toBe(
      '45% of 1,000 entries, 50% of 100 B, 20% of 100 B of history',
    );
    expect(quotaCell({ entries: 450, bytes: 50, history: 20, quota: { bytes: 100, historyBytes: 400 } }, size)).toBe('50% of 100 B, 5% of 400 B of history');
    expect(quotaCell({ entries: 450, bytes: 50, history: 20, quota: { bytes: 100, historyBytes: false } }, size)).toBe('50% of 100 B');
    expect(quotaCell({ entries: 3, bytes: 50, history: 0, quota: { entries: 2 } }, size)).toBe('150% of 2 entries');
    expect(quotaCell({ entries: 3, bytes: 50, history: 0 }, size)).toBe('-');
  });
});
