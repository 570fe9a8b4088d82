/** The history suite (suite.ts) on every store in Node; durable-object.workerd.test.ts runs it in workerd. */
import { onEveryStore } from '../support/stores.js';
import { describeHistory } from './suite.js';

onEveryStore('history', describeHistory);
