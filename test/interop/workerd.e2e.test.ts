import { startWorkerd } from '../runtime/servers/start-workerd.js';
import { withStablePort } from './stable-port.js';
import { describeInterop } from './suite.js';

// The built Cloudflare adapter in real workerd (a Durable Object per space, in-memory SQLite),
// behind a forwarding proxy so that a restart keeps the port.
describeInterop('workerd', withStablePort(startWorkerd));
