import { AsyncLocalStorage } from 'node:async_hooks';
import { type Context, type ContextManager, ROOT_CONTEXT, context, trace } from '@opentelemetry/api';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { handlePush } from '../../src/index.js';
import { gate } from '../support/gate.js';
import { mutation, post, pushBody, testContext, testMutators } from '../support/helpers.js';
import { registerSdk, type TestSdk } from './sdk.js';

/** What the Node SDK registers: the active context follows async calls. */
class AsyncContextManager implements ContextManager {
  readonly #storage = new AsyncLocalStorage<Context>();
  active = () => this.#storage.getStore() ?? ROOT_CONTEXT;
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.#storage.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind = <T>(_ctx: Context, target: T) => target;
  enable = () => this;
  disable = () => this;
}

let sdk: TestSdk;
beforeEach(() => {
  context.setGlobalContextManager(new AsyncContextManager());
  sdk = registerSdk();
});
afterEach(async () => {
  await sdk.stop();
  context.disable();
});

it("a mutator's spans are children of its own push's span, also when group commit runs it in another push's turn", async () => {
  const first = gate();
  const ctx = testContext({
    mutators: {
      ...testMutators,
      hold: async () => {
        trace.getTracer('app').startSpan('hold').end();
        await first.hold();
      },
      mark: async (_tx, group) =>
        trace
          .getTracer('app')
          .startSpan(`mark ${String(group)}`)
          .end(),
    },
  });
  const held = handlePush(post('/push', pushBody('g0', [mutation('c0', 1, 'hold')])), ctx);
  await first.started;
  const queued = ['g1', 'g2'].map((group, i) => handlePush(post('/push', pushBody(group, [mutation(`c${i + 1}`, 1, 'mark', group)])), ctx));
  await new Promise((resolve) => setTimeout(resolve, 100));
  first.release();
  expect((await Promise.all([held, ...queued])).map((response) => response.status)).toEqual([200, 200, 200]);

  const pushes = new Map(sdk.spans('viewsync push').map((span) => [span.attributes['viewsync.client_group_id'], span.spanContext().spanId]));
  const parent = (name: string) => sdk.spans(name)[0]?.parentSpanContext?.spanId;
  expect([parent('hold'), parent('mark g1'), parent('mark g2')]).toEqual([pushes.get('g0'), pushes.get('g1'), pushes.get('g2')]);
  expect(pushes.size).toBe(3);
});
