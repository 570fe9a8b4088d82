import type { SyncContext } from '../context/context.js';
import { reportError } from '../context/context.js';
import {
  type Claimed,
  claimNext,
  type DeliveryRound,
  deliveryBody,
  type Hook,
  MAX_DELIVERY_CHARS,
  recordSent,
  reportClaim,
  send,
  type Step,
  type WebhookDelivery,
} from './webhooks.js';

/**
 * Deliveries of several spaces in one request, for a webhook whose receiver takes them
 * (`spacesPerDelivery` above 1): each space's batch is claimed and recorded in the space as
 * ever (its own delivery ID, the same for each attempt and replay), and the batches claimed
 * together go out in one POST, so that a load spread over many spaces costs its receiver, and
 * the webhook's slots, one request for many spaces. Claims and records are all asked at once:
 * delivery-transactions.ts puts them in few transactions (one over many spaces, where the store
 * runs one), a few at a time.
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
export async function deliverTogether(
  ctx: SyncContext,
  hook: Hook,
  owner: string,
  spaces: readonly string[],
  turns: number,
  round?: DeliveryRound,
): Promise<Map<string, Step>> {
  const steps = new Map<string, Step>();
  // One space's failure (its store down) is its own: the others go on.
  const failed = (space: string, error: unknown) => {
    reportError(ctx, error, { operation: 'webhook', space });
    steps.set(space, { kind: 'wait', until: ctx.clock() + 5_000 });
  };
  let claimed: Array<{ space: string; claim: Claimed }> = [];
  await Promise.all(
    // No look first, even at a space heard of from elsewhere: a claim with nothing due writes nothing, and waits for no push.
    spaces.map(async (space) => {
      try {
        const claim = await claimNext(ctx, space, hook, owner, true, round);
        if (claim.kind === 'deliver') claimed.push({ space, claim });
        else steps.set(space, claim);
      } catch (error) {
        failed(space, error);
      }
    }),
  );
  for (let turn = 1; claimed.length > 0; turn++) {
    const next: typeof claimed = [];
    for (const group of bySize(claimed)) {
      const deliveries = group.map(({ space, claim }) => deliveryBody(hook, space, claim));
      const body: WebhookDeliveries = { webhook: hook.name, delivery: await groupID(deliveries), deliveries };
      const outcome = await send(hook, body);
      await Promise.all(
        group.map(async ({ space, claim }) => {
          try {
            const recorded = await recordSent(ctx, space, hook, owner, claim, outcome, turn < turns, round);
            const after = recorded.next === undefined ? recorded.step : reportClaim(ctx, space, hook, recorded.next, round);
            if (after.kind === 'deliver') next.push({ space, claim: after });
            else steps.set(space, after);
          } catch (error) {
            failed(space, error);
          }
        }),
      );
    }
    claimed = next;
  }
  return steps;
}

/** The claims in groups of about `MAX_DELIVERY_CHARS` of JSON at most (one batch alone may take more). */
function bySize(claims: ReadonlyArray<{ space: string; claim: Claimed }>): Array<Array<{ space: string; claim: Claimed }>> {
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
