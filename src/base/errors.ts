import { json, type Reply, toResponse } from './reply.js';

/** One problem with a request body: where it is and what is wrong. */
export interface Issue {
  /** Dotted path of the field, e.g. `mutations.3.id`; empty for the body itself. */
  path: string;
  /** What is wrong with it. */
  message: string;
}

/**
 * The one error class the server turns into a response: a status and a message, sent as
 * `{error, message, issues?}`. Throw it from `authenticate` or `space` to refuse a request,
 * e.g. `throw new HTTPError(403, 'You are not a member of this workspace')`.
 */
export class HTTPError extends Error {
  override name = 'HTTPError';
  /** The HTTP status to answer with. */
  readonly status: number;
  /** Field-level problems, for a body that broke the schema. */
  readonly issues: readonly Issue[] | undefined;
  /** Extra response headers, such as `Allow` or `Retry-After`. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: number, message: string, options: HTTPErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.status = status;
    this.issues = options.issues;
    this.headers = options.headers ?? {};
  }

  /** A short name for the kind of error, such as `BadRequest`. */
  get code(): string {
    return STATUS_CODES[this.status] ?? (this.status >= 500 ? 'ServerError' : 'ClientError');
  }

  /** This error as a JSON response. */
  toResponse(): Response {
    return toResponse(this.toReply());
  }

  /** This error as a JSON {@link Reply} (what the handlers build before a `Response`). */
  toReply(): Reply {
    const body = { error: this.code, message: this.message, ...(this.issues && { issues: this.issues }) };
    return json(body, this.status, this.headers);
  }
}

/** Options for {@link HTTPError}. */
export interface HTTPErrorOptions {
  /** Field-level problems. */
  issues?: readonly Issue[];
  /** Extra response headers. */
  headers?: Record<string, string>;
  /** The underlying error. */
  cause?: unknown;
}

/**
 * Thrown by a mutator whose mutation can succeed later (a dependency is down, a lock is held).
 * The push stops before that mutation, keeps the ones before it, does not advance its client's
 * lastMutationID, and answers 503 with `Retry-After`, so the client backs off and retries
 * (spec, push rule 7). Anything else a mutator throws is permanent: the mutation is skipped.
 */
export class TemporaryError extends HTTPError {
  override name = 'TemporaryError';

  constructor(message: string, options: { retryAfterSeconds?: number; cause?: unknown } = {}) {
    super(503, message, { cause: options.cause, headers: { 'retry-after': String(options.retryAfterSeconds ?? 1) } });
  }
}

/**
 * A mutation (or a backend write) would take its space over a quota of `SyncOptions.quotas`.
 * Not an `HTTPError`: in a push it is a permanent failure, the mutation skipped as if its mutator
 * had thrown; `transact` and `mutate` reject with it. Here, beside the HTTP errors, so that
 * telemetry can tell a quota's refusal from a mutator's.
 */
export class QuotaExceededError extends Error {
  override name = 'QuotaExceededError';
  /** The space, and which of its quotas the write would have passed. */
  readonly space: string;
  readonly quota: 'entries' | 'bytes' | 'historyBytes';
  /** What the space would have held, and its quota. */
  readonly wouldHold: number;
  readonly limit: number;

  constructor(space: string, quota: 'entries' | 'bytes' | 'historyBytes', wouldHold: number, limit: number) {
    const n = (x: number) => x.toLocaleString('en-US');
    const held = quota === 'historyBytes' ? 'keep' : 'hold';
    const what =
      quota === 'entries'
        ? 'entries'
        : quota === 'bytes'
          ? 'bytes of keys and values'
          : "bytes of history (its change log's values before and after, and tombstones, kept until retention lets them go)";
    const still =
      quota === 'historyBytes'
        ? 'deletes are still allowed, and housekeeping frees what retention lets go (retention.changesMs, tombstonesMs)'
        : 'deletes and shrinking writes are still allowed';
    super(`QuotaExceeded: space ${JSON.stringify(space)} would ${held} ${n(wouldHold)} ${what}, over its quota of ${n(limit)} (quotas.${quota}); ${still}`);
    this.space = space;
    this.quota = quota;
    this.wouldHold = wouldHold;
    this.limit = limit;
  }
}

const STATUS_CODES: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  410: 'Gone',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
  429: 'TooManyRequests',
  500: 'InternalServerError',
  503: 'ServiceUnavailable',
};
