import type { SyncContext } from '../context/context.js';
import { reportError } from '../context/context.js';
import { clockOf } from '../context/state.js';
import { afterRecord, type Claimed, claimNext, type DeliveryRound, deliveryBody, type Hook, MAX_DELIVERY_CHARS, recordIn, recordSent, reportClaim, send, type Step, type WebhookDelivery } from './webhooks.js';
import { type Claim, claimDelivery } from '../sync/feed/deliveries.js';
import { inManyLanes } from './many-lanes.js';

/**
 * Deliveries of several spaces in one request, for a webhook whose receiver takes them
 * (`spacesPerDelivery` above 1): each space's batch is claimed and recorded in the space as
 * ever (its own delivery ID, the same for each attempt and replay), and the batches claimed
 * together go out in one POST, so that a load spread over many spaces costs its receiver, and
 * the webhook's slots, one request for many spaces. Where the store runs a transaction over many
 * spaces' deliveries lanes (many-lanes.ts), the group's claims are one transaction, and so are its
 * records: the store, too, pays once per request rather than once per space.
 */

/** What a delivery of several spaces POSTs, as JSON (`spacesPerDelivery` above 1): the body `verifyWebhook` resolves with. */
export interface WebhookDeliveries {
  /** The webhook's name. */
  webhook: string;
  /**
   * This request's ID (also the `idempotency-key` header), made from its entries' IDs: the same
   * when the same batches go together again. A retry may group them otherwise: keep each entry's
   * `delivery` (or each change's `id`), not this.
   */
  delivery: string;
  /** One space's batch each, as a one-space delivery's body: in order within each space. */
  deliveries: WebhookDelivery[];
}

/**
 * Claims the batches due of `hook` in `spaces`, sends those claimed together (in requests of
 * about 1 MB at most), records each in its space, and goes on with the next batches claimed by
 * those records, up to `turns` requests: resolves with the step each space came to.
 */
export async function deliverTogether(ctx: SyncContext, hook: Hook, owner: string, spaces: ReadonlyArray<{ space: string; checked: boolean }>, turns: number, round?: DeliveryRound): Promise<Map<string, Step>> {
  const steps = new Map<string, Step>();
  // One space's failure (its store down) is its own: the others go on.
  const failed = (space: string, error: unknown) => {
    reportError(ctx, error, { operation: 'webhook', space });
    steps.set(space, { kind: 'wait', until: clockOf(ctx).now + 5_000 });
  };
  let claimed: Array<{ space: string; claim: Claimed }> = [];
  const claimedOne = (space: string, claim: Claimed | Step) => (claim.kind === 'deliver' ? claimed.push({ space, claim }) : steps.set(space, claim));
  // One transaction for every space's claim where the store runs one (no look first: a claim with nothing due writes nothing, and takes no push's lock).
  const now = clockOf(ctx).now;
  const together = await inManyLanes(ctx, spaces.map(({ space }) => space), (tx, space) => claimDelivery(tx, space, hook.rule, owner, now));
  if (together !== undefined) for (const [space, claim] of together) claimedOne(space, reportClaim(ctx, space, hook, claim, round));
  else {
    await inTurn(
      spaces.map(({ space, checked }) => async () => {
        try {
          claimedOne(space, await claimNext(ctx, space, hook, owner, checked, round));
        } catch (error) {
          failed(space, error);
        }
      }),
    );
  }
  for (let turn = 1; claimed.length > 0; turn++) {
    const next: typeof claimed = [];
    for (const group of bySize(hook, claimed)) {
      const deliveries = group.map(({ space, claim }) => deliveryBody(hook, space, claim));
      const body: WebhookDeliveries = { webhook: hook.name, delivery: await groupID(deliveries), deliveries };
      const outcome = await send(hook, body);
      const more = turn < turns;
      const recordedOne = (space: string, recorded: { step: Step; next?: Claim }) => {
        const after = recorded.next === undefined ? recorded.step : reportClaim(ctx, space, hook, recorded.next, round);
        if (after.kind === 'deliver') next.push({ space, claim: after });
        else steps.set(space, after);
      };
      // Every space's record (and next claim) in one transaction where the store runs one.
      const at = clockOf(ctx).now;
      const claims = new Map(group.map(({ space, claim }) => [space, claim]));
      const records = await inManyLanes(ctx, [...claims.keys()], (tx, space) => recordIn(ctx, tx, space, hook, owner, claims.get(space)!, outcome, more, at));
      if (records !== undefined) for (const { space, claim } of group) recordedOne(space, afterRecord(ctx, space, hook, claim, outcome, records.get(space)!, at, round));
      else {
        await inTurn(
          group.map(({ space, claim }) => async () => {
            try {
              recordedOne(space, await recordSent(ctx, space, hook, owner, claim, outcome, more, round));
            } catch (error) {
              failed(space, error);
            }
          }),
        );
      }
    }
    claimed = next;
  }
  return steps;
}

/**
 * Runs `tasks`, {@link AT_ONCE} at a time: each is a transaction of its own space, and a group of
 * a hundred spaces at once would hold every connection of the store's pool that pushes need.
 */
async function inTurn(tasks: ReadonlyArray<() => Promise<void>>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) await tasks[next++]!();
  };
  await Promise.all(Array.from({ length: Math.min(AT_ONCE, tasks.length) }, worker));
}

/** Transactions a group runs at once. */
const AT_ONCE = 4;

/** The claims in groups of about `MAX_DELIVERY_CHARS` of JSON at most (one batch alone may take more). */
function bySize(hook: Hook, claims: ReadonlyArray<{ space: string; claim: Claimed }>): Array<Array<{ space: string; claim: Claimed }>> {
  const groups: Array<Array<{ space: string; claim: Claimed }>> = [];
  let size = Infinity;
  for (const each of claims) {
    const chars = JSON.stringify(each.claim.changes).length;
    if (size + chars > MAX_DELIVERY_CHARS) {
      groups.push([]);
      size = 0;
    }
    groups.at(-1)!.push(each);
    size += chars;
  }
  return groups;
}

/** A request's ID from its entries' IDs. */
async function groupID(deliveries: readonly WebhookDelivery[]): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(deliveries.map(({ delivery }) => delivery).join('\n')));
  return `together:${[...new Uint8Array(digest).subarray(0, 16)].map((byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}
