// A pull in Deno under a registered tracer provider, printing the spans it made as one JSON
// line; spawned by deno.test.ts. JavaScript, so Deno loads the built package as a user would.
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { createContext, handlePull, memoryStorage } from '../../dist/index.js';

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }));
const body = { pullVersion: 1, clientGroupID: 'g', cookie: null, profileID: 'p', schemaVersion: '' };
const request = new Request('http://localhost/pull', {
  method: 'POST',
  headers: { 'content-type': 'application/json', 'x-replicache-requestid': 'deno-1' },
  body: JSON.stringify(body),
});
const response = await handlePull(request, createContext({ storage: memoryStorage(), mutators: {} }));
await response.arrayBuffer();
console.log(JSON.stringify({ status: response.status, spans: exporter.getFinishedSpans().map((span) => ({ name: span.name, attributes: span.attributes })) }));
