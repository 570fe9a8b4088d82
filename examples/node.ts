// Node: `npx tsx examples/node.ts`. PORT and HOST are optional.
import { memoryStorage, createContext } from 'viewsync';
import { serve } from 'viewsync/node';
import { mutators } from './app.js';

const port = Number(process.env.PORT ?? 8787);
const server = await serve(createContext({ storage: memoryStorage(), mutators }), { port, hostname: process.env.HOST }).catch(
  (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EADDRINUSE' && error.code !== 'EACCES') throw error;
    const why = error.code === 'EADDRINUSE' ? 'is in use' : 'needs privileges';
    console.error(`Port ${port} ${why}: pick another with PORT, e.g. \`PORT=${port + 1} npx tsx examples/node.ts\`.`);
    process.exit(1);
  },
);
console.log(`viewsync on Node ${process.version}\n  pullURL: ${new URL('pull', server.url)}\n  pushURL: ${new URL('push', server.url)}`);
// Graceful: requests in flight are answered, poke streams told to reconnect. Once, as Ctrl-C
// signals tsx and this process both, and tsx passes its own on.
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void server.stop().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
