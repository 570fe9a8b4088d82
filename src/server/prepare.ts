import type * as v from 'valibot';
import { fitsUTF8, hasLoneSurrogate } from '../base/utf8.js';
import type { Limits } from '../sync/transactions/limits.js';
import { type SyncContext, reportError } from '../context/context.js';
import { HTTPError, TemporaryError } from '../base/errors.js';
import { fetchRequest } from '../base/request-stand-in.js';
import { isTemporary } from '../storage/unreachable.js';
import { json, type Reply } from '../base/reply.js';
import { parseBody, readJSONBody } from './read-body.js';
import type { Failed, Requester } from '../telemetry/facts.js';
import { admit, groupKey } from '../context/rates.js';
import { type OlderSchema, schemaAccess, stepsFrom } from '../sync/schema/schema-options.js';

/** A request that passed every check, ready for the sync layer. */
interface Prepared<T> {
  body: T;
  userID: string | undefined;
  space: string;
  limits: Limits;
  /** The steps from the request's older schema version up to today's (oldest first); undefined for today's, or without `schema`. */
  older: readonly OlderSchema[] | undefined;
}

/** What differs between the pull and the push endpoint. */
export interface Endpoint<TSchema extends v.GenericSchema> {
  /** `pull` or `push`: the versionType of a VersionNotSupported answer. */
  kind: 'pull' | 'push';
  /** The body's version field and the versions this server speaks. */
  versionField: 'pullVersion' | 'pushVersion';
  versions: readonly number[];
  schema: TSchema;
  /** Cuts a parsed body down to what one request may make the server do, before validation. */
  bound?: (raw: Record<string, unknown>, limits: Limits) => Record<string, unknown>;
  /** The path of the first ID in the body that `fits` refuses, if any. */
  longID: (body: v.InferOutput<TSchema>, fits: (id: string) => boolean) => string | undefined;
}

/**
 * The checks both endpoints make, in the order a client can act on: method (405), who is
 * asking (401), the body (415, 413, 400), then the protocol versions (VersionNotSupported, as a
 * 200 value) and finally which space. Resolves to a {@link Reply} when the request ends here.
 */
export async function prepare<TSchema extends v.GenericSchema>(
  request: Request,
  ctx: SyncContext,
  endpoint: Endpoint<TSchema>,
): Promise<Prepared<v.InferOutput<TSchema>> | Reply> {
  if (request.method !== 'POST') {
    throw new HTTPError(405, `${request.method} is not allowed on the ${endpoint.kind} endpoint; use POST`, { headers: { allow: 'POST' } });
  }
  const userID = await identify(request, ctx);
  const { limits } = ctx;
  const { rates } = ctx.state;
  // Rates are checked as soon as who is asking is known, before any storage work: a user's
  // before reading the body, a group's once the body names it.
  const now = rates === undefined ? 0 : ctx.clock();
  if (userID !== undefined) admit(rates, endpoint.kind === 'push' ? 'user_pushes' : 'user_pulls', userID, now);
  let raw = await readJSONBody(request, limits.bodyBytes);

  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new HTTPError(400, `The body must be a JSON object (a ${endpoint.kind} request)`, { issues: [{ path: '', message: 'Expected an object' }] });
  }
  // Spec: a server ignores a version it does not expect, so only the version field is read.
  const version = (raw as Record<string, unknown>)[endpoint.versionField];
  if (typeof version === 'number' && !endpoint.versions.includes(version)) {
    return versionNotSupported(endpoint.kind);
  }
  if (endpoint.bound) raw = endpoint.bound(raw as Record<string, unknown>, limits);
  const body = parseBody(endpoint.schema, raw, `${endpoint.kind} request`);
  const fits = (id: string) => fitsUTF8(id, limits.idBytes);
  const long = endpoint.longID(body, fits);
  if (long !== undefined) throw tooLong(long, limits);
  if (rates !== undefined) {
    const { clientGroupID, clientID } = body as { clientGroupID?: string; clientID?: string };
    admit(rates, endpoint.kind === 'push' ? 'pushes' : 'pulls', groupKey(userID, clientGroupID ?? `client ${clientID}`), now);
  }
  const { schemaVersion } = body as { schemaVersion: string };
  if (!acceptsSchema(ctx.schemaVersion, schemaVersion)) return versionNotSupported('schema');
  let older: readonly OlderSchema[] | undefined;
  if (ctx.schema !== undefined) {
    const access = schemaAccess(ctx.schema, schemaVersion, ctx.clock());
    // A closed version's pushes are still applied: the new version's client recovers the old
    // groups' pending mutations by pushing them under their old version, and a refusal here
    // would drop them for good. Its pulls are refused, so its clients update.
    if (access === 'unknown' || (access === 'closed' && endpoint.kind === 'pull')) return versionNotSupported('schema');
    if (access !== 'current') older = stepsFrom(ctx.schema, schemaVersion);
  }
  const space = await resolveSpace(request, ctx, userID, limits);
  return { body, userID, space, limits, older };
}

/** Who sent the request (`authenticate`); 401 when it refuses, undefined when there is none. */
export async function identify(request: Request, ctx: SyncContext): Promise<string | undefined> {
  if (!ctx.authenticate) return undefined;
  const userID: unknown = await ctx.authenticate(fetchRequest(request));
  if (userID === null || userID === undefined) throw new HTTPError(401, 'The Authorization header was missing, expired or not accepted');
  // A bug of the app's (an ID from a database as a number, say), not the client's: a 500, with
  // what to fix in the message `onError` gets.
  if (typeof userID !== 'string')
    throw new TypeError(
      `authenticate returned ${typeof userID === 'object' ? 'an object' : `a ${typeof userID}`}; it must return the user's ID as a string (String(id)), or null to answer 401`,
    );
  return userID;
}

/** Which space the request syncs (`space`), checked as an ID. */
export async function resolveSpace(request: Request, ctx: SyncContext, userID: string | undefined, limits: Limits): Promise<string> {
  const space = ctx.space ? await ctx.space(fetchRequest(request), userID) : '';
  if (typeof space !== 'string' || !fitsUTF8(space, limits.idBytes) || hasLoneSurrogate(space)) {
    throw new HTTPError(400, `The space this request names must be a well-formed string of at most ${limits.idBytes} bytes (limits.idBytes)`);
  }
  return space;
}

/**
 * Runs a handler and turns every failure into a response (see {@link failed}).
 */
export async function respond(request: Request, ctx: SyncContext, handle: () => Promise<Reply>): Promise<Reply> {
  try {
    return await handle();
  } catch (thrown) {
    return failed(request, ctx, thrown, undefined).reply;
  }
}

/**
 * What a request that threw `thrown` came to, `by` whom if known, and its reply: an `HTTPError`
 * answers as itself, a store that could not be reached (or a standby reached instead of the
 * primary) a 503 with `Retry-After`, whatever the store, and anything else a 500 that reveals
 * nothing. 5xx failures go to `onError`.
 */
export function failed(request: Request, ctx: SyncContext, thrown: unknown, by: Requester | undefined): Failed {
  const error = isTemporary(thrown) ? storeUnavailable(thrown) : thrown;
  if (error instanceof HTTPError) {
    if (error.status >= 500) reportError(ctx, error, { request });
    return { kind: 'failed', by, error, reply: error.toReply() };
  }
  reportError(ctx, error, { request });
  return { kind: 'failed', by, error, reply: new HTTPError(500, 'The server failed to handle the request; nothing was changed').toReply() };
}

/** Who a pull or push is for, once it passed its checks: only a schema version the app's `schema` serves is named, since a client's string is no label. */
export function requester(ctx: SyncContext, space: string, clientGroup: Requester['clientGroup'], schemaVersion: string): Requester {
  return { space, clientGroup, schemaVersion: ctx.schema === undefined ? undefined : schemaVersion };
}

/**
 * A lost connection is temporary on every store (spec, push rule 7: the client backs off and
 * sends again). Said without the driver's message, which may name hosts; `onError` gets it as the cause.
 */
function storeUnavailable(cause: unknown): TemporaryError {
  return new TemporaryError('The store is unavailable for a moment (a lost connection, or a failover under way): retry', { cause });
}

function tooLong(path: string, limits: Limits): HTTPError {
  const message = `Longer than the limit of ${limits.idBytes} bytes (limits.idBytes)`;
  return new HTTPError(400, `Invalid request: ${path}: ${message}`, { issues: [{ path, message }] });
}

/** Sent with status 200: the client only reads the bodies of 200 responses. */
function versionNotSupported(versionType: 'pull' | 'push' | 'schema'): Reply {
  return json({ error: 'VersionNotSupported', versionType });
}

function acceptsSchema(accepted: SyncContext['schemaVersion'], schemaVersion: string): boolean {
  if (accepted === undefined) return true;
  if (typeof accepted === 'string') return accepted === schemaVersion;
  if (typeof accepted === 'function') return accepted(schemaVersion);
  return accepted.includes(schemaVersion);
}
