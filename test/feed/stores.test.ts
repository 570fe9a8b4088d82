/** The change feed's invariant (suite.ts) on every store in Node; durable-object.workerd.test.ts runs it in workerd. */
import { onEveryStore } from '../support/stores.js';
import { describeFeed } from './suite.js';

onEveryStore('feed', (store, create) => describeFeed(store, create, Number(process.env.FC_RUNS ?? 100)));
