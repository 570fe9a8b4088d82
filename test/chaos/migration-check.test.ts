import { describe, expect, it } from 'vitest';
import type { JSONValue } from '../../src/index.js';
import { ITEMS, judgeMigrations } from './migration-check.js';

const items = (value: (n: number) => Record<string, number>) =>
  new Map<string, JSONValue>(Array.from({ length: ITEMS }, (_, n) => [`item/${String(n).padStart(4, '0')}`, { n, ...value(n) }]));

describe('the chaos checker of migrations', () => {
  it('passes every item migrated once by each migration begun', () => {
    expect(judgeMigrations(new Map([['s', items(() => ({ 'chaos-1': 1, 'chaos-2': 1 }))]]), new Map([['s', ['chaos-1', 'chaos-2']]]))).toEqual([]);
  });

  it('reports an item migrated twice, one not migrated, and one lost', () => {
    const data = items((n): Record<string, number> => (n === 3 ? { 'chaos-1': 2 } : n === 4 ? {} : { 'chaos-1': 1 }));
    data.delete('item/0007');
    const anomalies = judgeMigrations(new Map([['s', data]]), new Map([['s', ['chaos-1']]]));
    expect(anomalies.map(({ detail }) => detail.slice(0, 40))).toEqual([
      's: item/0003 shows chaos-1 2 times (each',
      's: item/0004 shows chaos-1 0 times (each',
      's: item/0007 is undefined, not an item n',
    ]);
  });
});
