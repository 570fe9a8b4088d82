// The runtime suite's app as a Cloudflare Worker, from the built package: every request goes to
// one Durable Object per space (`?space=`, default `default`), which keeps the space's data in its
// own SQLite storage. Bundled by ./start-workerd.ts; JavaScript, so that the type check does not
// need dist/, which is built only when tests start.
import { createSyncObject, routeToObject } from '../../../dist/cloudflare.js';
import { MAX_BODY_BYTES, RUNTIME_INSPECTOR_SECRET, runtimeMutators, runtimeView } from '../app.ts';

export const SyncObject = createSyncObject((env) => ({
  mutators: runtimeMutators,
  view: runtimeView,
  limits: { bodyBytes: MAX_BODY_BYTES },
  onError: () => {},
  inspector: { secret: RUNTIME_INSPECTOR_SECRET, onAction: () => {} },
  // The header exactly as the client sent it, or 401 (the client then calls getAuth).
  ...(env.REQUIRE_AUTH !== undefined && { authenticate: (request) => (request.headers.get('authorization') === env.REQUIRE_AUTH ? 'interop-user' : null) }),
}));

export default routeToObject({ binding: 'SYNC', space: (request) => new URL(request.url).searchParams.get('space') ?? 'default' });
