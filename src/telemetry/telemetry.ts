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
import type { PullFacts, PushFacts, PushRan, Requester } from './facts.js';

/**
 * OpenTelemetry traces and metrics, through `@opentelemetry/api` only: the app registers an SDK
 * and an exporter, or nothing, and then every call here is a no-op. The tracer and the
 * instruments are looked up again whenever the global provider changes, so an SDK registered
 * after this module loaded is still used; with no meter provider no metric is even computed.
 * Nothing here may throw into a request: every recording is guarded.
 */

export type { Context };
export type { MutationTally, PullFacts, PushFacts } from './facts.js';

/** The instrumentation scope's name and version (the package's; a test keeps them equal). */
export const SCOPE = 'viewsync';
export const VERSION = '0.2.0';

/** The app's mutators, by name: only their names are read, to bound a metric's label set. */
type KnownMutators = Readonly<Record<string, unknown>>;

/** What a pull or push came to. */
type Facts = PullFacts | PushFacts;

/** The bucket a mutator name outside the app's mutators is counted in, so a client cannot grow a metric's label set. */
export const UNKNOWN_MUTATOR = '(unknown)';

/**
 * How a pull or push ended, as `viewsync.outcome`: `ok`, a protocol answer (`ClientStateNotFound`,
 * `VersionNotSupported`), `TemporaryError`, or the code of the `HTTPError` it answered
 * (`BadRequest`, `InternalServerError`…): a small, fixed set.
 */
type Outcome = string;

/**
 * Handles one pull or push with `handle`, which returns what it came to ({@link PullFacts} or
 * {@link PushFacts}, the reply among them), and records those facts: the request's span (the
 * active one meanwhile, so spans made inside are its children), its metrics, and the inspector's
 * `live` numbers when the context keeps them. Resolves with the reply.
 */
export function observe(kind: 'pull', request: Request, handle: () => Promise<PullFacts>, live?: LiveStats): Promise<Reply>;
export function observe(kind: 'push', request: Request, handle: () => Promise<PushFacts>, live?: LiveStats): Promise<Reply>;
export function observe(kind: 'pull' | 'push', request: Request, handle: () => Promise<Facts>, live?: LiveStats): Promise<Reply> {
  const op = new Operation(kind, request);
  // Nobody listens: only the reply is read, and no clock.
  if (!op.listening && live === undefined) return handle().then(replyOf);
  const started = live === undefined ? 0 : performance.now();
  return op.run(handle).then((facts) => {
    if (live !== undefined)
      guard(() =>
        live.request(
          kind,
          facts.reply.status,
          performance.now() - started,
          facts.kind === 'unsupported' ? undefined : facts.by?.space,
          facts.kind === 'pushed' ? facts.mutations : undefined,
        ),
      );
    return op.record(facts);
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
  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.span.isRecording() ? context.with(trace.setSpan(context.active(), this.span), fn) : fn();
  }

  /** Records what `facts` say happened, and ends the operation with their reply (a streamed pull's body counted as it is read). */
  record(facts: Facts): Reply {
    switch (facts.kind) {
      case 'unsupported':
        this.#outcome = 'VersionNotSupported';
        return this.#end(facts.reply);
      case 'failed':
        if (facts.by !== undefined) this.#identified(facts.by);
        this.#failed(facts.error);
        return this.#end(facts.reply);
      case 'lost':
        this.#identified(facts.by);
        this.#outcome = 'ClientStateNotFound';
        return this.#end(facts.reply);
      case 'patched':
        this.#identified(facts.by);
        return this.#end(this.#pulled(facts.patch, facts.reply, facts.sentOperations));
      case 'pushed':
        this.#identified(facts.by);
        this.#pushed(facts.mutations, facts.outcome, facts.mutators);
        return this.#end(facts.reply);
    }
  }

  /** Who the request is for, once it passed its checks. */
  #identified({ space, clientGroup, schemaVersion }: Requester): void {
    this.#schemaVersion = schemaVersion;
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
        sentOperations.then(
          (operations) => guard(() => histogram.record(operations)),
          () => {},
        );
      }
      if (bytes !== undefined) this.#metrics?.bodySize.record(bytes);
      else if (this.#metrics && reply.body instanceof ReadableStream) reply.body = counted(reply.body, this.#metrics.bodySize);
    });
    return reply;
  }

  /**
   * A push ran: its counts by mutator, its wait for the space, and how it ended: a TemporaryError
   * stopped it, or it found the client's state lost (then it answers that alone: its failures are not told).
   */
  #pushed(mutations: number, result: PushRan, mutators: KnownMutators): void {
    if (result.kind === 'stopped') this.#outcome = 'TemporaryError';
    else if (result.kind === 'lost') this.#outcome = 'ClientStateNotFound';
    if (result.kind !== 'lost') for (const { mutation, error } of result.failures) this.#mutationFailed(mutation.name, mutation.id, error, mutators);
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
        for (const kind of RESULTS)
          if (counts[kind] > 0) this.#metrics.mutations.add(counts[kind], { 'viewsync.mutator': mutator, 'viewsync.mutation.result': kind });
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

function replyOf(facts: Facts): Reply {
  return facts.reply;
}
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
    const seconds = (name: string, description: string) =>
      meter.createHistogram(name, { unit: 's', description, advice: { explicitBucketBoundaries: SECONDS } });
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
      refusals: meter.createCounter('viewsync.refusals', {
        unit: '{refusal}',
        description: "Requests a rate refused (429) and mutations a space's quota refused, by viewsync.refusal",
      }),
      webhookDeliveries: meter.createCounter('viewsync.webhook.deliveries', {
        unit: '{delivery}',
        description: 'Webhook delivery attempts, by viewsync.webhook and viewsync.outcome (delivered, failed, disabled)',
      }),
      webhookLag: meter.createHistogram('viewsync.webhook.lag', {
        unit: 's',
        description: "From a delivered batch's first commit to its delivery",
        advice: { explicitBucketBoundaries: [...SECONDS, 30, 60, 300, 3_600, 86_400] },
      }),
      webhookLagVersions: meter.createHistogram('viewsync.webhook.lag.versions', {
        unit: '{version}',
        description: "Versions the space had moved past a delivered batch's end when it was sent",
        advice: { explicitBucketBoundaries: [0, 1, 10, 100, 1_000, 10_000, 100_000] },
      }),
      historyOperations: meter.createCounter('viewsync.history.operations', {
        unit: '{operation}',
        description: 'Restores, reverts and erasures of a space, by viewsync.operation and viewsync.dry_run',
      }),
      historyChanges: meter.createCounter('viewsync.history.changes', {
        unit: '{change}',
        description: 'Keys the restores, reverts and erasures changed (or, dry runs, would change), by viewsync.operation and viewsync.dry_run',
      }),
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
  return new ReadableStream<Uint8Array>(
    {
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
    },
    { highWaterMark: 0 },
  );
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
