/** Helpers for the routed-storage tests: a context whose space is the request's `?space=`, and a push and pull to one. */
import { handlePull, handlePush, type Storage, type SyncContext, type SyncOptions, createContext } from '../../src/index.js';
import { type mutation, post, pullBody, pushBody, testMutators } from '../support/helpers.js';

export function spaceContext(storage: Storage, overrides: Partial<SyncOptions> = {}): SyncContext & { errors: unknown[] } {
  const errors: unknown[] = [];
  return Object.assign(
    createContext({
      storage,
      mutators: testMutators,
      space: (request) => new URL(request.url).searchParams.get('space') ?? '',
      onError: (error) => errors.push(error),
      ...overrides,
    }),
    { errors },
  );
}

export async function pushTo(ctx: SyncContext, space: string, group: string, mutations: ReturnType<typeof mutation>[]): Promise<Response> {
  return handlePush(post(`/push?space=${encodeURIComponent(space)}`, pushBody(group, mutations)), ctx);
}

export async function pullFrom(ctx: SyncContext, space: string, group: string, cookie: unknown): Promise<Response> {
  return handlePull(post(`/pull?space=${encodeURIComponent(space)}`, pullBody(group, cookie as never)), ctx);
}
