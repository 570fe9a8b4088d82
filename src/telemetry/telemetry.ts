import {
  type Attributes,
  type Context,
  type Counter,
  type Histogram,
  type MeterProvider,
  type Span,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  type UpDownCounter,
  context,
  createNoopMeter,
  metrics,
  trace,
} from '@opentelemetry/api';
import { HTTPError, QuotaExceededError, TemporaryError } from '../base/errors.js';
import type { Reply } from '../base/reply.js';
import { utf8Length } from '../base/utf8.js';
import type { LiveStats } from './live.js';

/**
 * OpenTelemetry traces and metrics, through `@opentelemetry/api` only: the app registers an SDK
 * and an exporter, or nothing, and then every call here is a no-op. The tracer and the
 * instruments are looked up again whenever the global provider changes, so an SDK registered
 * after this module loaded is still used; with no meter provider no metric is even computed.
 * Nothing here may throw into a request: every recording is guarded.
 */

export type { Context };

/** The instrumentation scope's name and version (the package's; a test keeps them equal). */
export const SCOPE = 'viewsync';
export const VERSION = '0.2.0';

/** The app's mutators, by name: only their names are read, to bound a metric's label set. */
type KnownMutators = Readonly<Record<string, unknown>>;

/** The bucket a mutator name outside the app's mutators is counted in, so a client cannot grow a metric's label set. */
export const UNKNOWN_MUTATOR = '(unknown)';

/**
 * How a pull or push ended, as `viewsync.outcome`: `ok`, a protocol answer (`ClientStateNotFound`,
 * `VersionNotSupported`), `TemporaryError`, or the code of the `HTTPError` it answered
 * (`BadRequest`, `InternalServerError`…): a small, fixed set.
 */
type Outcome = string;

/** How many of a push's mutations each mutator ran (`processed`), threw (`failed`) or was sent again (`skipped`). */
export interface MutationTally {
  processed: number;
  failed: number;
  skipped: number;
}

/**
 * What a pull or push came to, as its handler tells it, filled in as the request goes: the one
 * place that records it is {@link observe}. Plain data: handlers know nothing of telemetry.
 */
export interface Report {
  /** Who the request is for, once it passed its checks. */
  space?: string;
  clientGroup?: { clientGroupID: string } | { clientID: string };
  /** A protocol answer other than a patch or `{}`. */
  answered?: 'ClientStateNotFound' | 'VersionNotSupported';
  /** The schema version of a request, when the context's `schema` serves it: a set the app bounds, so a label (`viewsync.schema_version`). */
  schemaVersion?: string;
  /** The patch a pull answered with (its start, when the rest is read as it is sent). */
  patch?: ReadonlyArray<{ readonly op: string }>;
  /** A patch read as it is sent: resolves with its operations once it is whole (never, when it broke off). */
  sentOperations?: Promise<number>;
  /** A push that ran: how many mutations it carried, what came of them, and the app's mutators (their names bound a label set). */
  pushed?: { mutations: number; outcome: PushTally; mutators: KnownMutators };
  /** What the handler threw (an HTTPError, a TemporaryError, anything else: a 500). */
  failed?: unknown;
}

/** What telemetry reads of a push's outcome. */
interface PushTally {
  tally: ReadonlyMap<string, MutationTally>;
  waitedMs: number;
  batchSize: number;
  stoppedBy: unknown;
  failures: ReadonlyArray<{ mutation: { name: string; id: number }; error: unknown }>;
}

/**
 * Handles one pull or push with `handle`, which fills in a {@link Report}, and records the
 * report and the reply once it is made: the request's span (the active one meanwhile, so spans
 * made inside are its children), its metrics, and the inspector's `live` numbers when the context
 * keeps them. When nobody listens, `handle`'s own promise is returned: not even an await is added.
 */
export function observe(kind: 'pull' | 'push', request: Request, handle: (report: Report) => Promise<Reply>, live?: LiveStats): Promise<Reply> {
  const op = new Operation(kind, request);
  if (!op.listening && live === undefined) return handle({});
  const report: Report = {};
  const started = live === undefined ? 0 : performance.now();
  return op.run(() => handle(report)).then((reply) => {
    if (live !== undefined) guard(() => live.request(kind, reply.status, performance.now() - started, report.space, report.pushed?.mutations));
    return op.record(report, reply);
  });
}

/** One pull or push: its span (recording only under an SDK) and what its metrics need. */
export class Operation {
  readonly span: Span;
  readonly #kind: 'pull' | 'push';
  readonly #metrics: Instruments | undefined;
  /** When it began (performance.now), read only when someone listens: the clock costs too. */
  readonly #started: number;
  #outcome: Outcome = 'ok';
  #reset: boolean | undefined;
  #schemaVersion: string | undefined;

  constructor(kind: 'pull' | 'push', request: Request) {
    this.#kind = kind;
    this.#metrics = instruments();
    this.span = startSpan(kind, request);
    this.#started = this.listening ? performance.now() : 0;
  }

  /** True when anyone listens (a recording span or a meter): costly figures are computed only then. */
  get listening(): boolean {
    return this.#metrics !== undefined || this.span.isRecording();
  }

  /** Runs `fn` with this operation's span as the active one, so that spans made inside (a mutator's, a database driver's) are its children. */
  run(fn: () => Promise<Reply>): Promise<Reply> {
    return this.span.isRecording() ? context.with(trace.setSpan(context.active(), this.span), fn) : fn();
  }

  /** Records what `report` says happened, and ends the operation with `reply` (a streamed pull's body counted as it is read). */
  record(report: Report, reply: Reply): Reply {
    if (report.space !== undefined && report.clientGroup !== undefined) this.#identified(report.space, report.clientGroup);
    if (report.pushed !== undefined) {
      const { mutations, outcome, mutators } = report.pushed;
      this.#pushed(mutations, outcome, mutators);
      // A push that found the client's state lost answers that alone: its failures are not told.
      if (report.answered !== 'ClientStateNotFound') for (const { mutation, error } of outcome.failures) this.#mutationFailed(mutation.name, mutation.id, error, mutators);
    }
    if (report.answered !== undefined) this.#outcome = report.answered;
    this.#schemaVersion = report.schemaVersion;
    // Last, as it happened last: a failure after the push ran is the request's outcome.
    if (report.failed !== undefined) this.#failed(report.failed);
    return this.#end(report.patch === undefined ? reply : this.#pulled(report.patch, reply, report.sentOperations));
  }

  /** Who the request is for, once it passed its checks. */
  #identified(space: string, clientGroup: { clientGroupID: string } | { clientID: string }): void {
    if (!this.span.isRecording()) return;
    guard(() => {
      this.span.setAttribute('viewsync.space', space);
      if ('clientGroupID' in clientGroup) this.span.setAttribute('viewsync.client_group_id', clientGroup.clientGroupID);
      else this.span.setAttribute('viewsync.client_id', clientGroup.clientID);
    });
  }

  /** A pull answered `patch` with `reply`. Its size in bytes is counted only when someone listens. */
  #pulled(patch: ReadonlyArray<{ readonly op: string }>, reply: Reply, sentOperations: Promise<number> | undefined): Reply {
    this.#reset = patch[0]?.op === 'clear';
    if (!this.listening) return reply;
    guard(() => {
      const bytes = typeof reply.body === 'string' ? utf8Length(reply.body) : undefined;
      this.span.setAttributes({ 'viewsync.pull.reset': this.#reset!, 'viewsync.pull.streamed': bytes === undefined });
      if (bytes !== undefined) this.span.setAttribute('viewsync.pull.body.size', bytes);
      // A patch read as it is sent is counted once whole, after the span ended.
      if (sentOperations === undefined) {
        this.span.setAttribute('viewsync.pull.patch.operations', patch.length);
        this.#metrics?.patchOperations.record(patch.length);
      } else if (this.#metrics) {
        const histogram = this.#metrics.patchOperations;
        sentOperations.then((operations) => guard(() => histogram.record(operations)), () => {});
      }
      if (bytes !== undefined) this.#metrics?.bodySize.record(bytes);
      else if (this.#metrics && reply.body instanceof ReadableStream) reply.body = counted(reply.body, this.#metrics.bodySize);
    });
    return reply;
  }

  /** A push ran: its counts by mutator, its wait for the space, and a TemporaryError that stopped it. */
  #pushed(mutations: number, result: PushTally, mutators: KnownMutators): void {
    if (result.stoppedBy !== undefined) this.#outcome = 'TemporaryError';
    if (!this.listening) return;
    guard(() => {
      let processed = 0;
      let failed = 0;
      let skipped = 0;
      for (const [name, counts] of result.tally) {
        processed += counts.processed;
        failed += counts.failed;
        skipped += counts.skipped;
        if (this.#metrics === undefined) continue;
        const mutator = Object.hasOwn(mutators, name) ? name : UNKNOWN_MUTATOR;
        for (const kind of RESULTS) if (counts[kind] > 0) this.#metrics.mutations.add(counts[kind], { 'viewsync.mutator': mutator, 'viewsync.mutation.result': kind });
      }
      this.span.setAttributes({
        'viewsync.push.mutations': mutations,
        'viewsync.push.mutations.processed': processed,
        'viewsync.push.mutations.failed': failed,
        'viewsync.push.mutations.skipped': skipped,
        'viewsync.push.queue_wait': result.waitedMs / 1000,
        'viewsync.push.group_size': result.batchSize,
      });
    });
  }

  /** A mutation's mutator threw (or its quota refused it): an event on the span, with the error's type but not its message. */
  #mutationFailed(name: string, id: number, error: unknown, mutators: KnownMutators): void {
    if (error instanceof QuotaExceededError) countRefusal(`quota.${error.quota}`);
    if (!this.span.isRecording()) return;
    guard(() => {
      const mutator = Object.hasOwn(mutators, name) ? name : UNKNOWN_MUTATOR;
      this.span.addEvent('viewsync.mutation.failed', { 'viewsync.mutator': mutator, 'viewsync.mutation.id': id, 'error.type': errorType(error) });
    });
  }

  /** The handler threw `error`: a 5xx is recorded on the span as an error, a 4xx only as the outcome. */
  #failed(error: unknown): void {
    const status = error instanceof HTTPError ? error.status : 500;
    this.#outcome = error instanceof TemporaryError ? 'TemporaryError' : error instanceof HTTPError ? error.code : 'InternalServerError';
    if (status < 500 || !this.span.isRecording()) return;
    guard(() => this.span.recordException(error instanceof Error ? error : String(error)));
  }

  /** Ends the span and records the duration: the reply is made (a streamed body may still be read). */
  #end(reply: Reply): Reply {
    if (!this.listening) return reply;
    const seconds = (performance.now() - this.#started) / 1000;
    guard(() => {
      if (reply.status >= 500 && this.#outcome === 'ok') this.#outcome = 'InternalServerError';
      const attributes: Attributes = { 'viewsync.outcome': this.#outcome };
      if (this.#kind === 'pull' && this.#reset !== undefined) attributes['viewsync.pull.reset'] = this.#reset;
      // How many requests each schema version still makes: when an older one's fall to none, its window can close.
      if (this.#schemaVersion !== undefined) attributes['viewsync.schema_version'] = this.#schemaVersion;
      (this.#kind === 'pull' ? this.#metrics?.pullDuration : this.#metrics?.pushDuration)?.record(seconds, attributes);
      this.span.setAttributes({ 'viewsync.outcome': this.#outcome, 'http.response.status_code': reply.status });
      // A 503 of a TemporaryError a mutator threw is a failure too, though nothing was thrown here.
      if (reply.status >= 500) this.span.setStatus({ code: SpanStatusCode.ERROR, message: this.#outcome });
      this.span.end();
    });
    return reply;
  }
}

/** Transactions of a space that group commit ran, and how many jobs (pushes, backend calls) each held. */
export function recordBatchCommit(jobs: number, waitedMs: readonly number[]): void {
  const metrics = instruments();
  if (metrics === undefined) return;
  guard(() => {
    metrics.batchSize.record(jobs);
    for (const ms of waitedMs) metrics.groupWait.record(ms / 1000);
  });
}

/**
 * A request a rate refused (429: `rate.pushes`, `rate.user_pushes`, `rate.pulls`, `rate.user_pulls`) or a mutation
 * a space's quota refused (`quota.entries`, `quota.bytes`), counted by that reason.
 */
export function countRefusal(reason: `rate.${string}` | `quota.${string}`): void {
  const metrics = instruments();
  if (metrics !== undefined) guard(() => metrics.refusals.add(1, { 'viewsync.refusal': reason }));
}

/** A webhook delivery attempt and how it went; for a delivery, how long and how many versions its changes waited. */
export function recordDelivery(webhook: string, outcome: 'delivered' | 'failed' | 'disabled', lag?: { seconds: number; versions: number }): void {
  const metrics = instruments();
  if (metrics === undefined) return;
  guard(() => {
    const attributes = { 'viewsync.webhook': webhook, 'viewsync.outcome': outcome };
    metrics.webhookDeliveries.add(1, attributes);
    if (lag === undefined) return;
    metrics.webhookLag.record(lag.seconds, { 'viewsync.webhook': webhook });
    metrics.webhookLagVersions.record(lag.versions, { 'viewsync.webhook': webhook });
  });
}

/**
 * A restore, revert or erasure of a space's history (`dryRun`: one that only worked out what it
 * would do), and the keys it changed or would change: a dry run is counted apart, so that the
 * operations that wrote stand out.
 */
export function recordHistoryOperation(operation: 'restore' | 'revert' | 'erase', dryRun: boolean, changes: number): void {
  const metrics = instruments();
  if (metrics === undefined) return;
  guard(() => {
    const attributes = { 'viewsync.operation': operation, 'viewsync.dry_run': dryRun };
    metrics.historyOperations.add(1, attributes);
    metrics.historyChanges.add(changes, attributes);
  });
}

/** A poke stream opened (+1) or closed (-1). */
export function countPokeStreams(change: 1 | -1): void {
  const metrics = instruments();
  if (metrics !== undefined) guard(() => metrics.pokeStreams.add(change));
}

/** The active context, to run later work in (a group commit runs a push's job in its own). */
export function activeContext(): Context {
  return context.active();
}

/** Runs `fn` in `ctx`; without a context manager, just runs it. */
export function inContext<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}

interface Instruments {
  pullDuration: Histogram;
  pushDuration: Histogram;
  mutations: Counter;
  patchOperations: Histogram;
  bodySize: Histogram;
  batchSize: Histogram;
  groupWait: Histogram;
  pokeStreams: UpDownCounter;
  refusals: Counter;
  webhookDeliveries: Counter;
  webhookLag: Histogram;
  webhookLagVersions: Histogram;
  historyOperations: Counter;
  historyChanges: Counter;
}

const RESULTS = ['processed', 'failed', 'skipped'] as const;
const SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

let meterProvider: MeterProvider | undefined;
let made: Instruments | undefined;
let tracerProvider: TracerProvider | undefined;
let tracer: Tracer | undefined;

/** The instruments of the global meter provider; none when it is the API's no-op one. */
function instruments(): Instruments | undefined {
  const provider = metrics.getMeterProvider();
  if (provider === meterProvider) return made;
  meterProvider = provider;
  made = undefined;
  guard(() => {
    const meter = provider.getMeter(SCOPE, VERSION);
    if (meter === createNoopMeter()) return;
    const seconds = (name: string, description: string) => meter.createHistogram(name, { unit: 's', description, advice: { explicitBucketBoundaries: SECONDS } });
    made = {
      pullDuration: seconds('viewsync.pull.duration', 'Time from a pull request to its reply'),
      pushDuration: seconds('viewsync.push.duration', 'Time from a push request to its reply, its mutations committed'),
      mutations: meter.createCounter('viewsync.push.mutations', { unit: '{mutation}', description: 'Mutations of committed pushes, by mutator and result' }),
      patchOperations: meter.createHistogram('viewsync.pull.patch.operations', {
        unit: '{operation}',
        description: 'Operations in a pull answer',
        advice: { explicitBucketBoundaries: [0, 1, 10, 100, 1_000, 10_000, 100_000, 1_000_000] },
      }),
      bodySize: meter.createHistogram('viewsync.pull.body.size', {
        unit: 'By',
        description: 'Bytes of a pull answer',
        advice: { explicitBucketBoundaries: [256, 1024, 4096, 16_384, 65_536, 262_144, 1_048_576, 4_194_304, 16_777_216, 67_108_864, 268_435_456] },
      }),
      batchSize: meter.createHistogram('viewsync.group_commit.size', {
        unit: '{job}',
        description: 'Pushes and backend calls that shared one storage transaction',
        advice: { explicitBucketBoundaries: [1, 2, 4, 8, 16, 32, 64, 128, 256] },
      }),
      groupWait: seconds('viewsync.group_commit.wait', "Time a push or backend call waited for its space's transaction to start"),
      pokeStreams: meter.createUpDownCounter('viewsync.poke.streams', { unit: '{stream}', description: 'Poke streams open' }),
      refusals: meter.createCounter('viewsync.refusals', { unit: '{refusal}', description: "Requests a rate refused (429) and mutations a space's quota refused, by viewsync.refusal" }),
      webhookDeliveries: meter.createCounter('viewsync.webhook.deliveries', { unit: '{delivery}', description: 'Webhook delivery attempts, by viewsync.webhook and viewsync.outcome (delivered, failed, disabled)' }),
      webhookLag: meter.createHistogram('viewsync.webhook.lag', { unit: 's', description: "From a delivered batch's first commit to its delivery", advice: { explicitBucketBoundaries: [...SECONDS, 30, 60, 300, 3_600, 86_400] } }),
      webhookLagVersions: meter.createHistogram('viewsync.webhook.lag.versions', {
        unit: '{version}',
        description: "Versions the space had moved past a delivered batch's end when it was sent",
        advice: { explicitBucketBoundaries: [0, 1, 10, 100, 1_000, 10_000, 100_000] },
      }),
      historyOperations: meter.createCounter('viewsync.history.operations', { unit: '{operation}', description: 'Restores, reverts and erasures of a space, by viewsync.operation and viewsync.dry_run' }),
      historyChanges: meter.createCounter('viewsync.history.changes', { unit: '{change}', description: 'Keys the restores, reverts and erasures changed (or, dry runs, would change), by viewsync.operation and viewsync.dry_run' }),
    };
  });
  return made;
}

function startSpan(kind: 'pull' | 'push', request: Request): Span {
  try {
    const provider = trace.getTracerProvider();
    if (provider !== tracerProvider) {
      tracerProvider = provider;
      // Cleared first: a provider whose getTracer throws gets no spans, not the last provider's.
      tracer = undefined;
      tracer = provider.getTracer(SCOPE, VERSION);
    }
    const span = tracer!.startSpan(kind === 'pull' ? 'viewsync pull' : 'viewsync push');
    if (span.isRecording()) {
      const id = request.headers.get('x-replicache-requestid');
      if (id !== null) span.setAttribute('viewsync.request_id', id.slice(0, 128));
    }
    return span;
  } catch {
    return trace.wrapSpanContext({ traceId: '0'.repeat(32), spanId: '0'.repeat(16), traceFlags: 0 });
  }
}

/** A stream that records its length in bytes once it has all been read. */
function counted(body: ReadableStream<Uint8Array>, histogram: Histogram): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let bytes = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await reader.read();
      if (next.done) {
        guard(() => histogram.record(bytes));
        controller.close();
        return;
      }
      bytes += next.value.byteLength;
      controller.enqueue(next.value);
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
}

function errorType(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

/** Telemetry is never worth a failed request: an SDK that throws is ignored. */
function guard(fn: () => void): void {
  try {
    fn();
  } catch {
    // Ignored on purpose.
  }
}
