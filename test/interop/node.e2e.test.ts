import { memoryStorage } from '../../src/index.js';
import { serve } from '../../adapters/node.js';
import { runtimeContext } from '../runtime/context.js';
import { describeInterop } from './suite.js';

describeInterop('node', ({ port = 0, requireAuth } = {}) => {
  // With requireAuth: the header exactly as the client sent it, or 401 (the client then calls getAuth).
  const authenticate =
    requireAuth === undefined ? undefined : (request: Request) => (request.headers.get('authorization') === requireAuth ? 'interop-user' : null);
  return serve(runtimeContext(memoryStorage(), authenticate && { authenticate }), { port });
});
