import { describe, expect, it } from 'vitest';
import { SpaceLocks } from '../../src/storage/lock.js';

describe('SpaceLocks', () => {
  it('keeps a lock only while a space is held or waited for: 1,000 spaces leave none behind', async () => {
    const locks = new SpaceLocks();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held = Array.from({ length: 1000 }, (_, i) => locks.hold(`space ${i % 100}`, i % 3 === 0, () => gate));
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(locks.size).toBe(100);
    release();
    await Promise.all(held);
    expect(locks.size).toBe(0);
  });

  it('a hold of no space waits for every space, and every space waits for it', async () => {
    const locks = new SpaceLocks();
    const order: string[] = [];
    let release!: () => void;
    const a = locks.hold('a', true, () => new Promise<void>((resolve) => (release = resolve)).then(() => order.push('a')));
    const all = locks.hold(undefined, false, () => order.push('all'));
    const b = locks.hold('b', false, () => order.push('b'));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(order).toEqual([]);
    release();
    await Promise.all([a, all, b]);
    expect(order).toEqual(['a', 'all', 'b']);
  });
});
