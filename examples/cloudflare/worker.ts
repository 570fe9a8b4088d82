// Cloudflare Workers: one Durable Object per space, each keeping its space in its own SQLite
// storage. `npx wrangler dev` in this folder (wrangler.toml declares the object).
import { createSyncObject, routeToObject } from 'viewsync/cloudflare';
import { mutators } from '../app.js';

export const SyncObject = createSyncObject(() => ({ mutators }));

// The Worker routes each request to its space's object: here `?space=`, e.g. a document ID.
export default routeToObject({ binding: 'SYNC', space: (request) => new URL(request.url).searchParams.get('space') ?? 'main' });
