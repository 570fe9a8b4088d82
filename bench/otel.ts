/**
 * With `VIEWSYNC_BENCH_OTEL=1`, the bench runs under an OpenTelemetry SDK as an app would start
 * one: the Node SDK (its async context manager, a batch span processor, a periodic metric reader)
 * whose exporters drop what they are given, so the figures show what viewsync's spans and
 * metrics cost, not what a network exporter does. Without it nothing is registered, and every
 * telemetry call is the API's no-op. `VIEWSYNC_BENCH_OTEL=nocontext` is the same SDK without its
 * async context manager (AsyncLocalStorage, which every promise of the process then pays for),
 * to tell that cost from the spans' and metrics' own.
 */
import { type Context, type ContextManager, ROOT_CONTEXT } from '@opentelemetry/api';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { AggregationTemporality, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace';

/** Starts the SDK when the environment asks for it; resolves to a stop function, or undefined. */
export function startBenchSdk(): (() => Promise<void>) | undefined {
  const mode = process.env.VIEWSYNC_BENCH_OTEL;
  if (mode !== '1' && mode !== 'nocontext') return undefined;
  const done = (callback: (result: { code: number }) => void) => callback({ code: 0 });
  const spans: SpanExporter = { export: (_spans, callback) => done(callback), shutdown: async () => {} };
  const points: PushMetricExporter = {
    export: (_metrics, callback) => done(callback),
    forceFlush: async () => {},
    shutdown: async () => {},
    selectAggregationTemporality: () => AggregationTemporality.CUMULATIVE,
  };
  const sdk = new NodeSDK({
    serviceName: 'viewsync-bench',
    resourceDetectors: [],
    ...(mode === 'nocontext' && { contextManager: new NoContext() }),
    spanProcessors: [new BatchSpanProcessor({ exporter: spans })],
    metricReaders: [new PeriodicExportingMetricReader({ exporter: points, exportIntervalMillis: 1_000 })],
  });
  sdk.start();
  return () => sdk.shutdown();
}

/** A context manager that keeps no context: spans have no parents, and promises pay nothing. */
class NoContext implements ContextManager {
  active = (): Context => ROOT_CONTEXT;
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(_context: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return fn.call(thisArg, ...args);
  }
  bind = <T>(_context: Context, target: T): T => target;
  enable = () => this;
  disable = () => this;
}
