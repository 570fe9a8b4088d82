import { expect } from 'vitest';
import { metrics, trace } from '@opentelemetry/api';
import { type DataPoint, type Histogram, MeterProvider, type MetricData, MetricReader } from '@opentelemetry/sdk-metrics';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';

/** Metrics read on demand: `collect()` is all a test needs. */
class TestReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

/** An in-memory OpenTelemetry SDK, registered globally as an app would, and what it recorded. */
export interface TestSdk {
  /** Spans ended so far. */
  spans(name?: string): ReadableSpan[];
  /** The metric named `name` as last collected (cumulative), or undefined. */
  metric(name: string): Promise<MetricData | undefined>;
  /** The data points of metric `name`. */
  points<T = number>(name: string): Promise<Array<DataPoint<T>>>;
  /** Unregisters the SDK. */
  stop(): Promise<void>;
}

export function registerSdk(): TestSdk {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  const metric = async (name: string) => {
    const { resourceMetrics } = await reader.collect();
    return resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics).find((m) => m.descriptor.name === name);
  };
  return {
    spans: (name) => exporter.getFinishedSpans().filter((span) => name === undefined || span.name === name),
    metric,
    points: async <T>(name: string) => ((await metric(name))?.dataPoints ?? []) as Array<DataPoint<T>>,
    async stop() {
      trace.disable();
      metrics.disable();
      await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]);
    },
  };
}

/** The one span named `name` that `sdk` has seen end: fails the test if there is none, or more. */
export function onlySpan(sdk: TestSdk, name: string): ReadableSpan {
  const spans = sdk.spans(name);
  expect(spans.map((span) => span.name)).toEqual([name]);
  return spans[0]!;
}

export type { Histogram };
