import { memoryStorage, type SyncContext } from '../../src/index.js';
import { serve } from '../../adapters/node.js';
import { runtimeContext } from '../runtime/app.js';
import { describeInterop } from './suite.js';

describeInterop('node', ({ port = 0, requireAuth } = {}) => {
  const ctx: SyncContext = runtimeContext(memoryStorage());
  if (requireAuth !== undefined) {
    // The header exactly as the client sent it, or 401 (the client then calls getAuth).
    ctx.authenticate = (request) => (request.headers.get('authorization') === requireAuth ? 'interop-user' : null);
  }
  return serve(ctx, { port });
});
