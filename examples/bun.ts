// Bun: `npx bun examples/bun.ts` (in this repository `viewsync` resolves to the source through
// tsconfig.json's paths; in your project it is the installed package).
import { memoryStorage, createContext } from 'viewsync';
import { serve } from 'viewsync/bun';
import { mutators } from './app.js';

const server = await serve(createContext({ storage: memoryStorage(), mutators }), { port: Number(process.env.PORT ?? 8787) });
console.log(`viewsync on Bun\n  pullURL: ${new URL('pull', server.url)}\n  pushURL: ${new URL('push', server.url)}`);
