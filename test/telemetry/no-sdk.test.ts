import { type Meter, type MeterProvider, type TracerProvider, metrics, trace } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { handlePoke, handlePull, handlePush } from '../../src/index.js';
import { Operation } from '../../src/telemetry/telemetry.js';
import { mutation, post, pull, pullBody, push, pushBody, testContext } from '../support/helpers.js';

afterEach(() => {
  trace.disable();
  metrics.disable();
});

/** Pushes, pulls, refuses a bad request and opens a poke stream: what the app would see. */
async function exercise(): Promise<void> {
  const ctx = testContext();
  await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 }), mutation('c', 2, 'putThenFail', { key: 'b', value: 1 })]);
  expect((await pull(ctx, 'g', null)).patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'a', value: 1 }]);
  expect((await handlePull(post('/pull', '{'), ctx)).status).toBe(400);
  expect((await handlePush(post('/push', pushBody('g', [mutation('c', 3, 'putThenTemporary', { key: 'c', value: 1 })])), ctx)).status).toBe(503);
  const stream = await handlePoke(new Request('http://localhost/poke'), ctx);
  expect(stream.status).toBe(200);
  await stream.body!.cancel();
}

describe('without an OpenTelemetry SDK', () => {
  it('pull and push work and nothing listens: no span records, no metric is computed', async () => {
    await exercise();
    const op = new Operation('pull', post('/pull', pullBody('g', null)));
    expect(op.listening).toBe(false);
    expect(op.span.isRecording()).toBe(false);
  });
});

describe('with an SDK that throws', () => {
  it('every request is answered as without one', async () => {
    const broken = () => {
      throw new Error('broken SDK');
    };
    const meter = new Proxy({}, { get: () => () => ({ add: broken, record: broken }) }) as Meter;
    metrics.setGlobalMeterProvider({ getMeter: () => meter } as MeterProvider);
    trace.setGlobalTracerProvider({ getTracer: () => ({ startSpan: broken, startActiveSpan: broken }) } as unknown as TracerProvider);
    expect(new Operation('push', post('/push', {})).listening).toBe(true);
    await exercise();
  });

  it('a tracer provider whose getTracer throws is taken for none', async () => {
    trace.setGlobalTracerProvider({
      getTracer: () => {
        throw new Error('broken SDK');
      },
    } as unknown as TracerProvider);
    await exercise();
  });

  it('a recording span whose setAttribute throws leaves every request answered', async () => {
    const span = new Proxy(
      {},
      {
        get: (_, name) =>
          name === 'isRecording'
            ? () => true
            : () => {
                throw new Error('broken SDK');
              },
      },
    );
    trace.setGlobalTracerProvider({ getTracer: () => ({ startSpan: () => span }) } as unknown as TracerProvider);
    await exercise();
  });

  it('a meter provider whose getMeter throws is taken for none', async () => {
    metrics.setGlobalMeterProvider({
      getMeter: () => {
        throw new Error('broken SDK');
      },
    } as MeterProvider);
    await exercise();
  });
});
