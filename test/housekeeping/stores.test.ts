import { onEveryStore } from '../support/stores.js';
import { describeHousekeeping } from './suite.js';

onEveryStore('gc', describeHousekeeping);
