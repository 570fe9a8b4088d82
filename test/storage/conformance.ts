import { describe, it } from 'vitest';
import type { Storage } from '../../src/storage/types.js';
import { type ConformanceOptions, storageConformance } from '../../src/testing/conformance.js';

/**
 * Registers the shared storage conformance suite (`viewsync/testing`) as vitest tests: every
 * driver's test file calls it once. Property checks run `FC_RUNS` cases (default 200).
 *
 * @example
 * describeStorageConformance('memoryStorage', () => memoryStorage());
 */
export function describeStorageConformance(name: string, create: () => Storage | Promise<Storage>, options: ConformanceOptions = {}): void {
  describe(`${name} conforms to Storage`, () => {
    for (const check of storageConformance(create, { runs: Number(process.env.FC_RUNS ?? 200), ...options })) it(check.name, check.run);
  });
}
