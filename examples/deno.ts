// Deno: `npm run build && deno run --allow-net --allow-read --config examples/deno.json examples/deno.ts`
// (deno.json maps `viewsync` to the built package here; in your project, import it from npm).
import { memoryStorage } from 'viewsync';
import { serve } from 'viewsync/deno';
import { mutators } from './app.js';

const server = await serve({ storage: memoryStorage(), mutators }, { port: 8787 });
console.log(`viewsync on Deno\n  pullURL: ${new URL('pull', server.url)}\n  pushURL: ${new URL('push', server.url)}`);
