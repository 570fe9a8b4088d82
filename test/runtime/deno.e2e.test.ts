import { describeCompression } from './compression.js';
import { describeRuntime } from './suite.js';
import { spawnServer } from './spawn-server.js';

// The built package in real Deno, from node_modules (package.json makes Deno resolve `valibot`
// there); no network: no remote modules, no update check, and permission only to listen locally.
const startDeno = () =>
  spawnServer('deno', ['run', '--no-prompt', '--no-remote', '--allow-net=127.0.0.1', 'test/runtime/servers/deno-server.js'], { DENO_NO_UPDATE_CHECK: '1' });
describeRuntime('deno', startDeno);
describeCompression('deno', startDeno, { chromium: 'gzip' });
