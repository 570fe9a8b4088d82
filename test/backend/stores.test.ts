import { onEveryStore } from '../support/stores.js';
import { describeBackend } from './suite.js';

onEveryStore('backend', describeBackend);
