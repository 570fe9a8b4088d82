import { onEveryStore } from '../stores.js';
import { describeHousekeeping } from './suite.js';

onEveryStore('gc', describeHousekeeping);
