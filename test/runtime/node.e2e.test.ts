import { memoryStorage } from '../../src/index.js';
import { serve } from '../../adapters/node.js';
import { runtimeContext } from './context.js';
import { describeCompression } from './compression.js';
import { describeRuntime } from './suite.js';

describeRuntime('node', () => serve(runtimeContext(memoryStorage()), { port: 0 }));
describeCompression('node', () => serve(runtimeContext(memoryStorage()), { port: 0 }), { chromium: 'br' });
