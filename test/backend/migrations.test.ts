import { describe } from 'vitest';
import { memoryStorage } from '../../src/index.js';
import { routedStorage } from '../../src/route/routed-storage.js';
import { onEveryStore } from '../support/stores.js';
import { describeMigrations } from './migrations-suite.js';

onEveryStore('migrations', describeMigrations);
describe('over several stores', () =>
  describeMigrations('routedStorage (memory, memory)', () => routedStorage({ stores: { a: memoryStorage(), b: memoryStorage() } })));
