import type { InspectorAction, SyncContext } from '../context/context.js';
import { HTTPError, QuotaExceededError } from '../base/errors.js';
import { enableDeliveries, replayDeliveries } from '../backend/webhooks.js';
import { HistoryGoneError, restoreSpace, revertChanges } from '../backend/history.js';
import { ChangeCursorError, ChangesGoneError } from '../sync/feed/feed-pages.js';
import type { RevertCause } from '../sync/version/records.js';
import { text, whole } from './params.js';
import type { ActionResult, EnableResult, ReplayResult } from './api-types.js';

type Body = Record<string, unknown>;
type Tell = (action: Omit<InspectorAction, 'at'>) => void;

/**
 * The inspector's actions (`POST <base>/api/<name>`), by name: each runs a backend call, and is
 * told to `onAction` with what it was asked and how it went, refused or failed ones included.
 * A restore or revert answers its first {@link MAX_LISTED} planned changes (and how many there were).
 */
export const ACTIONS: Readonly<Record<string, (ctx: SyncContext, body: Body, tell: Tell) => Promise<ActionResult>>> = {
  'webhooks/enable': (ctx, body, tell) => {
    const asked = { name: text(body, 'name', true), space: text(body, 'space', true) };
    return logged('webhook-enable', asked, tell, async (): Promise<EnableResult> => {
      // The webhook need not be this context's (the CLI's inspector names none): its state in the store is what is enabled.
      const enabled = await enableDeliveries(ctx, asked.name, asked.space);
      if (enabled === undefined)
        throw new HTTPError(400, `Webhook ${JSON.stringify(asked.name)} never delivered in space ${JSON.stringify(asked.space)}: there is nothing to enable`);
      return { wasDisabled: enabled };
    });
  },

  'webhooks/replay': (ctx, body, tell) => {
    const delivery = text(body, 'delivery');
    const which = delivery !== undefined ? { delivery } : { from: text(body, 'from', true), to: text(body, 'to', true) };
    const asked = { name: text(body, 'name', true), space: text(body, 'space', true), ...which };
    // Queued in the store: the processes that deliver the webhook send them (see replayWebhook).
    return logged('webhook-replay', asked, tell, async (): Promise<ReplayResult> => ({ queued: await replayDeliveries(ctx, asked.name, asked.space, which) }));
  },

  restore: (ctx, body, tell) => {
    const prefix = text(body, 'prefix');
    const asked = {
      space: text(body, 'space', true),
      to: required(whole(body, 'to', 0, Number.MAX_SAFE_INTEGER), 'to'),
      ...(prefix !== undefined && { prefix }),
      dryRun: flag(body, 'dryRun'),
    };
    return logged('restore', asked, tell, async () => listed(await restoreSpace(ctx, asked.space, asked)));
  },

  revert: (ctx, body, tell) => {
    const onConflict = text(body, 'onConflict') ?? 'stop';
    if (onConflict !== 'skip' && onConflict !== 'overwrite' && onConflict !== 'stop') throw new HTTPError(400, 'onConflict must be skip, overwrite or stop');
    const asked = { space: text(body, 'space', true), cause: causeOf(body.cause), onConflict, dryRun: flag(body, 'dryRun') } as const;
    return logged('revert', asked, tell, async () => listed(await revertChanges(ctx, asked.space, asked.cause, { onConflict, dryRun: asked.dryRun })));
  },
};

/** Changes listed in an answer, at most: a restore of a big space plans a change per key. */
export const MAX_LISTED = 1_000;

/** Runs an action, tells it, and answers its result; a refusal of the backend is a 4xx saying why. */
async function logged<T extends ActionResult['result']>(action: string, asked: Body, tell: Tell, run: () => Promise<T>): Promise<ActionResult<T>> {
  try {
    const result = await run();
    tell({ action, details: asked, outcome: asked.dryRun === true ? 'dry-run' : 'ok' });
    return { ok: true, result };
  } catch (thrown) {
    const error = refusal(thrown);
    tell({ action, details: asked, outcome: error instanceof Error ? error.message : String(error) });
    throw error;
  }
}

/** What a backend call's refusal is over HTTP: a question the store cannot answer now is not our failure. */
function refusal(error: unknown): unknown {
  if (error instanceof HTTPError) return error;
  if (error instanceof HistoryGoneError || error instanceof ChangesGoneError) return new HTTPError(410, error.message);
  if (error instanceof QuotaExceededError) return new HTTPError(409, error.message);
  if (error instanceof ChangeCursorError || error instanceof RangeError) return new HTTPError(400, error.message);
  return error;
}

/** A plan's result with its changes cut to {@link MAX_LISTED}, and their count. */
function listed<T extends { changes: unknown[] }>(result: T): T & { total: number } {
  return { ...result, changes: result.changes.slice(0, MAX_LISTED), total: result.changes.length };
}

function required<T>(value: T | undefined, name: string): T {
  if (value === undefined) throw new HTTPError(400, `${name} is missing`);
  return value;
}

function flag(body: Body, name: string): boolean {
  const value = body[name];
  if (typeof value !== 'boolean') throw new HTTPError(400, `${name} must be true or false`);
  return value;
}

/** A revert's cause, checked field by field; at least one is needed (all changes is a restore). */
function causeOf(raw: unknown): RevertCause {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new HTTPError(400, 'cause must be an object');
  const body = raw as Body;
  const cause: RevertCause = {};
  for (const field of ['userID', 'clientGroupID', 'mutator'] as const) {
    const value = text(body, field);
    if (value !== undefined && value !== '') cause[field] = value;
  }
  const since = whole(body, 'since', 0, Number.MAX_SAFE_INTEGER);
  if (since !== undefined) cause.since = since;
  if (body.versions !== undefined) {
    const versions = body.versions;
    if (!Array.isArray(versions) || versions.length !== 2 || !versions.every((each) => Number.isSafeInteger(each) && each >= 0))
      throw new HTTPError(400, 'cause.versions must be [from, to], whole numbers');
    cause.versions = [versions[0] as number, versions[1] as number];
  }
  if (body.mutation !== undefined) {
    const mutation = body.mutation as Body;
    if (typeof mutation !== 'object' || mutation === null) throw new HTTPError(400, 'cause.mutation must be {clientID, mutationID}');
    cause.mutation = {
      clientID: text(mutation, 'clientID', true),
      mutationID: required(whole(mutation, 'mutationID', 1, Number.MAX_SAFE_INTEGER), 'cause.mutation.mutationID'),
    };
  }
  if (Object.keys(cause).length === 0) throw new HTTPError(400, 'cause names no change: give a user, client group, mutator, versions, since or mutation');
  return cause;
}
