// Node: `npm start` (or `npx tsx examples/node.ts`). PORT and HOST are optional.
import { memoryStorage } from 'viewsync';
import { serve } from 'viewsync/node';
import { mutators } from './app.js';

const server = await serve({ storage: memoryStorage(), mutators }, { port: Number(process.env.PORT ?? 8787), hostname: process.env.HOST });
console.log(`viewsync on Node ${process.version}\n  pullURL: ${new URL('pull', server.url)}\n  pushURL: ${new URL('push', server.url)}`);
process.once('SIGINT', () => void server.stop().then(() => process.exit(0)));
