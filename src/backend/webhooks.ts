import type { SyncContext } from '../context/context.js';
import type { ResolvedWebhook } from '../context/options-schema.js';
import { reportError } from '../context/context.js';
import { checkContext } from '../context/state.js';
import { checkTarget } from '../base/outbound.js';
import { SIGNATURE_HEADER, signWebhook } from '../base/webhook-signature.js';
import {
  askAgain,
  type Claim,
  claimDelivery,
  deliveriesIn,
  deliveryDue,
  deliveryID,
  deliveryReads,
  enableDelivery,
  type Gap,
  type HookRule,
  finishDelivery,
  MAX_RECORDS,
} from '../sync/feed/deliveries.js';
import { type Cursor, type FeedChange, parseCursor } from '../sync/feed/feed-pages.js';
import { coversKey } from '../sync/version/prefixes.js';
import { recordDelivery } from '../telemetry/telemetry.js';
import { checkSpace } from './transact.js';
import { inDeliveries } from './delivery-transactions.js';

/**
 * Delivering webhooks (`changes.webhooks`): each webhook's changes of each space, in order, in
 * batches fixed at their first attempt, at least once, signed, retried with backoff, under a
 * lease in the store so that one instance sends each batch. One step of one webhook in one space
 * is a claim (a transaction), a POST, and a record of how it went (a transaction). Each of those
 * transactions is of the space's deliveries lane (`WriteLane`), which writes only delivery
 * rows: a store that locks the lanes apart (PostgreSQL, SQLite) never makes a push wait for one.
 */

/** What a delivery POSTs, as JSON: the body `verifyWebhook` resolves with. */
export interface WebhookDelivery {
  /** The webhook's name. */
  webhook: string;
  space: string;
  /** The delivery's ID: the same for each attempt and each replay of it (an idempotency key; also the `idempotency-key` header). */
  delivery: string;
  /** The batch is the space's changes after the cursor `from`, up to `to`, that the webhook wants. */
  from: string;
  to: string;
  /** In commit order; each with an `id` of its own, stable for ever. */
  changes: FeedChange[];
  /**
   * Changes of the space this webhook never delivered, and never will: those after `gap.from` up
   * to `gap.to`, which the change log had lost when an operator enabled the webhook after them
   * (`enableWebhook` with `afterGap`). A receiver that mirrors the space starts again from an
   * export. Absent in every other delivery.
   */
  gap?: Gap;
}

/** What a round of `deliverWebhooks` did. */
export interface DeliveryRound {
  delivered: number;
  failed: number;
  /** Webhooks disabled in a space this round (retried for `retryForMs`, or behind the change log's retention). */
  disabled: number;
}

/** A webhook as its deliveries use it: its options, and its rule for the delivery state. */
export interface Hook {
  name: string;
  options: ResolvedWebhook;
  rule: HookRule;
}

/** The webhooks of `ctx` that want `space`. */
export function hooksOf(ctx: SyncContext, space: string): Hook[] {
  return Object.entries(ctx.changes?.webhooks ?? {})
    .filter(([, options]) => (typeof options.spaces === 'function' ? options.spaces(space) : (options.spaces?.includes(space) ?? true)))
    .map(([name, options]) => ({ name, options, rule: ruleOf(name, options) }));
}

function ruleOf(name: string, options: ResolvedWebhook): HookRule {
  const { prefixes, topics } = options;
  const { timeoutMs } = options;
  return {
    name,
    wants: (change) => (change.op === 'event' ? (topics?.includes(change.topic) ?? true) : (prefixes?.some((prefix) => coversKey(prefix, change.key)) ?? true)),
    maxBatch: options.maxBatch,
    maxChars: MAX_DELIVERY_CHARS,
    retryForMs: options.retryForMs,
    // Past the request's own timeout, with room for the two transactions around it.
    leaseMs: timeoutMs + 10_000,
  };
}

/** What one step of a webhook in a space came to. */
export type Step = { kind: 'delivered' } | { kind: 'failed'; until: number } | { kind: 'wait'; until: number } | { kind: 'idle' } | { kind: 'disabled' };

/** Options for {@link deliverOnce}. */
export interface DeliverOptions {
  /** Counts what was done. */
  round?: DeliveryRound;
  /** The caller knows something is (or may be) due, from a change or a sweep: no read-only look first, straight to the claim. */
  checked?: boolean;
}

/** A batch claimed: to be sent, then recorded. */
export type Claimed = Extract<Claim, { kind: 'deliver' }>;

/**
 * Claims, sends and records batches of `hook` in `space`, up to `batches` of them while they
 * are due: each record of a delivery also claims the next batch, in the same transaction, so a
 * webhook keeping up costs one transaction of the space's deliveries lane per delivery, which
 * its pushes do not wait for (and which other spaces' may share: delivery-transactions.ts).
 */
export async function deliverOnce(
  ctx: SyncContext,
  space: string,
  hook: Hook,
  owner: string,
  batches: number,
  { round, checked = false }: DeliverOptions = {},
): Promise<Step> {
  let claim = await claimNext(ctx, space, hook, owner, checked, round);
  for (let sent = 1; ; sent++) {
    if (claim.kind !== 'deliver') return claim;
    const outcome = await send(hook, deliveryBody(hook, space, claim));
    const recorded = await recordSent(ctx, space, hook, owner, claim, outcome, sent < batches, round);
    if (recorded.next === undefined) return recorded.step;
    claim = reportClaim(ctx, space, hook, recorded.next, round);
  }
}

/** Looks whether anything is due (unless `checked`), then claims it: a batch to send, or the step it came to (said as it happened). */
export async function claimNext(ctx: SyncContext, space: string, hook: Hook, owner: string, checked: boolean, round?: DeliveryRound): Promise<Claimed | Step> {
  if (!checked) {
    // A look without the write lock: nothing due, a retry not yet due, or another instance's lease, and no claim is made.
    const due = await ctx.storage.transaction((tx) => deliveryDue(tx, space, hook.name, ctx.clock()), { readOnly: true, space });
    if (due === undefined) return { kind: 'idle' };
    if (due > ctx.clock()) return { kind: 'wait', until: due };
  }
  const claim = await inDeliveries(ctx, space, (tx) => claimDelivery(tx, space, hook.rule, owner, ctx.clock()), deliveryReads(space, hook.name));
  return reportClaim(ctx, space, hook, claim, round);
}

/** Says what a claim dropped or disabled, and what it came to. */
export function reportClaim(ctx: SyncContext, space: string, hook: Hook, claim: Claim, round?: DeliveryRound): Claimed | Step {
  for (const dropped of claim.dropped ?? [])
    reportError(ctx, new Error(`Webhook ${JSON.stringify(hook.name)} in space ${JSON.stringify(space)}: ${dropped}`), { operation: 'webhook', space });
  if (claim.kind !== 'disabled') return claim.kind === 'deliver' ? claim : claim.kind === 'wait' ? { kind: 'wait', until: claim.until } : { kind: 'idle' };
  // Said when it happens, not found later in `inspect`: the log lost what it had to send.
  if (claim.now) {
    recordDelivery(hook.name, 'disabled');
    if (round) round.disabled++;
    reportError(ctx, new Error(`Webhook ${JSON.stringify(hook.name)} is disabled in space ${JSON.stringify(space)}: ${claim.reason}`), {
      operation: 'webhook',
      space,
    });
  }
  return { kind: 'disabled' };
}

/**
 * Records how the attempt at `claim` went (and with `more`, after a delivery, claims the next
 * batch in the same transaction): the step it came to, or the next claim to send.
 */
export async function recordSent(
  ctx: SyncContext,
  space: string,
  hook: Hook,
  owner: string,
  claim: Claimed,
  outcome: Outcome,
  more: boolean,
  round?: DeliveryRound,
): Promise<{ step: Step; next?: Claim }> {
  const { retention } = ctx;
  const { batch, changes, version } = claim;
  const now = ctx.clock();
  const recorded = await inDeliveries(
    ctx,
    space,
    async (tx) => {
      const status = await finishDelivery(tx, space, hook.rule, owner, batch, outcome, now, retention.changesMs);
      return { status, next: more && outcome.ok && status === 'delivered' ? await claimDelivery(tx, space, hook.rule, owner, now) : undefined };
    },
    deliveryReads(space, hook.name),
  );
  if (!outcome.ok) {
    const disabled = recorded.status === 'disabled';
    recordDelivery(hook.name, disabled ? 'disabled' : 'failed');
    if (round) {
      round.failed++;
      if (disabled) round.disabled++;
    }
    if (disabled)
      reportError(ctx, new Error(`Webhook ${JSON.stringify(hook.name)} is disabled in space ${JSON.stringify(space)}: ${outcome.error}`), {
        operation: 'webhook',
        space,
      });
    // The claim's next answer says when its retry is due.
    return { step: disabled ? { kind: 'disabled' } : { kind: 'failed', until: now } };
  }
  const first = changes[0];
  const last = changes.at(-1);
  recordDelivery(hook.name, 'delivered', first && last && { seconds: Math.max(0, now - first.at) / 1000, versions: version - last.version });
  if (round) round.delivered++;
  return recorded.next === undefined || recorded.next.kind === 'idle'
    ? { step: recorded.next?.kind === 'idle' ? { kind: 'idle' } : { kind: 'delivered' } }
    : { step: { kind: 'delivered' }, next: recorded.next };
}

/** How an attempt went. */
export type Outcome = { ok: true } | { ok: false; error: string };

/** The body of one space's delivery of `claim`. */
export function deliveryBody(hook: Hook, space: string, { batch, changes }: Claimed): WebhookDelivery {
  return { webhook: hook.name, space, delivery: deliveryID(space, batch), from: batch.from, to: batch.to, changes, ...(batch.gap && { gap: batch.gap }) };
}

/** POSTs `body` to the webhook: delivered on a 2xx answer, failed on anything else (a redirect too), a timeout or a refused target. */
export async function send(hook: Hook, body: { delivery: string }): Promise<Outcome> {
  const text = JSON.stringify(body);
  const { timeoutMs } = hook.options;
  try {
    const url = new URL(hook.options.url);
    await checkTarget(url, hook.options.allowPrivateAddresses);
    const response = await fetch(url, {
      method: 'POST',
      body: text,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
      headers: {
        'content-type': 'application/json',
        'user-agent': 'viewsync-webhooks',
        'idempotency-key': body.delivery,
        'viewsync-webhook': hook.name,
        'viewsync-delivery': body.delivery,
        // Signed with the time it is sent: each attempt anew, under the same ID.
        [SIGNATURE_HEADER]: await signWebhook(hook.options.secret, text, Math.floor(Date.now() / 1000)),
      },
    });
    await response.body?.cancel().catch(() => {});
    return response.ok
      ? { ok: true }
      : {
          ok: false,
          error: `the receiver answered ${response.status}${response.status >= 300 && response.status < 400 ? ' (redirects are not followed)' : ''}`,
        };
  } catch (error) {
    const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
    return { ok: false, error: timedOut ? `no answer within ${timeoutMs} ms (timeoutMs)` : error instanceof Error ? error.message : String(error) };
  }
}

/** About this many characters of JSON per delivery. */
export const MAX_DELIVERY_CHARS = 1_000_000;

/**
 * Sends again deliveries webhook `name` made in `space` (each as it was, under its delivery ID,
 * and without moving the webhook's cursor): the one with ID `delivery`, or every one that held
 * changes after the cursor `from` up to `to`. Deliveries are kept as long as the change log's
 * rows (`retention.changesMs`). Resolves with how many were queued; rejects when none is kept.
 */
export async function replayWebhook(
  ctx: SyncContext,
  name: string,
  space: string,
  which: { delivery: string } | { from: string; to: string },
): Promise<number> {
  checkContext(ctx);
  checkSpace(space);
  hookNamed(ctx, name);
  return replayDeliveries(ctx, name, space, which);
}

/** {@link replayWebhook} for a webhook this context need not name (the CLI's inspector knows none): a process whose context names it sends them. */
export async function replayDeliveries(
  ctx: SyncContext,
  name: string,
  space: string,
  which: { delivery: string } | { from: string; to: string },
): Promise<number> {
  const range = 'delivery' in which ? rangeOf(space, which.delivery) : { from: parseCursor(which.from), to: parseCursor(which.to) };
  return ctx.storage.transaction(
    async (tx) => {
      let records = await deliveriesIn(tx, space, name, range.from, range.to);
      if ('delivery' in which) records = records.filter((record) => deliveryID(space, record) === which.delivery);
      if (records.length === 0)
        throw new RangeError(
          `replayWebhook: webhook ${JSON.stringify(name)} made no delivery ${'delivery' in which ? JSON.stringify(which.delivery) : `between ${which.from} and ${which.to}`} in space ${JSON.stringify(space)} that is still kept (deliveries are kept for retention.changesMs, at most ${MAX_RECORDS.toLocaleString('en-US')} a webhook in a space)`,
        );
      return askAgain(tx, space, name, records);
    },
    { readOnly: false, space, lane: 'deliveries' },
  );
}

/** Options for {@link enableWebhook}. */
export interface EnableWebhookOptions {
  /**
   * When the change log no longer holds the changes after the webhook's cursor (trimmed, or
   * written without the feed by an older viewsync): go on after them, from where the log is
   * whole, and never deliver them. The next delivery carries `gap` to tell the receiver.
   * Without it, such a webhook is not enabled: `enableWebhook` throws a `ChangesGoneError`.
   */
  afterGap?: boolean;
}

/**
 * Enables webhook `name` in `space` again after it was disabled; its batch in flight is sent at
 * once. Resolves whether it was disabled. A webhook the change log's gap stopped goes on only
 * with `afterGap` (see {@link EnableWebhookOptions.afterGap}); without it, a `ChangesGoneError`
 * says so.
 */
export async function enableWebhook(ctx: SyncContext, name: string, space: string, options: EnableWebhookOptions = {}): Promise<boolean> {
  checkContext(ctx);
  checkSpace(space);
  hookNamed(ctx, name);
  return (await enableDeliveries(ctx, name, space, options)) === true;
}

/** {@link enableWebhook} for a webhook this context need not name (the CLI's knows none): undefined when it never delivered in `space`. */
export async function enableDeliveries(ctx: SyncContext, name: string, space: string, options: EnableWebhookOptions = {}): Promise<boolean | undefined> {
  const enabled = await ctx.storage.transaction((tx) => enableDelivery(tx, space, name, ctx.clock(), options.afterGap === true), {
    readOnly: false,
    space,
    lane: 'deliveries',
  });
  if (enabled) for (const listener of ctx.state.changeListeners) listener(space);
  return enabled;
}

function hookNamed(ctx: SyncContext, name: string): ResolvedWebhook {
  const hook = ctx.changes?.webhooks?.[name];
  if (hook === undefined || !Object.hasOwn(ctx.changes!.webhooks!, name))
    throw new RangeError(`No webhook is named ${JSON.stringify(name)} in this context's changes.webhooks`);
  return hook;
}

/** The range a delivery ID of `space` names (see `deliveryID`). */
function rangeOf(space: string, delivery: string): { from: Cursor; to: Cursor } {
  const prefix = `${encodeURIComponent(space)}:`;
  const [from, to, extra] = delivery.startsWith(prefix) ? delivery.slice(prefix.length).split('..') : [];
  if (from === undefined || to === undefined || extra !== undefined)
    throw new RangeError(`replayWebhook: ${JSON.stringify(delivery.slice(0, 100))} is not the ID of a delivery of space ${JSON.stringify(space)}`);
  return { from: parseCursor(from), to: parseCursor(to) };
}
