import { onEveryStore } from '../stores.js';
import { describeBackend } from './suite.js';

onEveryStore('backend', describeBackend);
