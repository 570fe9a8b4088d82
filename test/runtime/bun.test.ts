import { describeRuntime } from './suite.js';
import { spawnServer } from './spawn-server.js';

// The built package in real Bun, from node_modules; `--no-install` keeps Bun from fetching anything.
describeRuntime('bun', () => spawnServer('bun', ['--no-install', 'test/runtime/servers/bun-server.js']));
