import { memoryStorage } from '../../src/index.js';
import { serve } from '../../adapters/node.js';
import { runtimeContext } from './app.js';
import { describeRuntime } from './suite.js';

describeRuntime('node', () => serve(runtimeContext(memoryStorage()), { port: 0 }));
