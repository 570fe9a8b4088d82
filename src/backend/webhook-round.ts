import type { SyncContext } from '../context/context.js';
import { checkContext } from '../context/state.js';
import { checkSpace } from './transact.js';
import { deliverOnce, type DeliveryRound, type Hook, hooksOf } from './webhooks.js';
import { FAILURES_PER_ROUND, HookSlots } from './webhook-slots.js';
import { sweepDeliveries } from './webhook-sweep.js';
import { deliverTogether } from './webhook-together.js';

/**
 * One round of webhook delivery, for a cron job, an edge function or a test; `startWebhooks`
 * (webhook-runner.ts) delivers continuously. Each step is `deliverOnce` (webhooks.ts); how the
 * webhooks share a round out is webhook-slots.ts's.
 */

/**
 * One round of delivery, for a cron job or a test: every webhook in every space (or `space`)
 * sends what it has due now, batch after batch, until nothing more is due; a failed batch waits
 * for its retry. Webhooks go side by side, each through its spaces one at a time; one whose
 * receiver failed in two spaces in a row leaves the rest to the next round. Resolves with what
 * it did. `startWebhooks` does the same continuously.
 */
export async function deliverWebhooks(ctx: SyncContext, options: { space?: string } = {}): Promise<DeliveryRound> {
  checkContext(ctx);
  if (options.space !== undefined) checkSpace(options.space);
  const round: DeliveryRound = { delivered: 0, failed: 0, disabled: 0 };
  const owner = `round-${crypto.randomUUID()}`;
  const work = new Map<string, Array<[string, Hook, boolean]>>();
  const add = (space: string, hook: Hook, checked: boolean) => {
    if (!work.has(hook.name)) work.set(hook.name, []);
    work.get(hook.name)!.push([space, hook, checked]);
  };
  // Over every space, only what the store says is due now: a round costs reads per thousand spaces, and steps where there is something to send.
  const now = ctx.clock();
  if (options.space === undefined) await sweepDeliveries(ctx, now, ({ space, hook, at }) => at <= now && add(space, hook, true));
  else for (const hook of hooksOf(ctx, options.space)) add(options.space, hook, false);
  // Each webhook on its own, so that a receiver that hangs holds up only its own webhook's deliveries.
  const walks = await Promise.allSettled(
    [...work.values()].map(async (spaces) => {
      const slots = new HookSlots(1);
      for (const [space, hook, checked] of spaces) {
        slots.take();
        // A webhook that takes several spaces a request gets that body shape here too, one space each.
        const step =
          hook.options.spacesPerDelivery === 1
            ? await deliverOnce(ctx, space, hook, owner, MAX_STEPS_PER_ROUND, { round, checked })
            : (await deliverTogether(ctx, hook, owner, [space], MAX_STEPS_PER_ROUND, round)).get(space)!;
        slots.give(step);
        if (slots.failures === FAILURES_PER_ROUND) return;
      }
    }),
  );
  // The first error, once every webhook has stopped: nothing of the round goes on after it.
  for (const walk of walks) if (walk.status === 'rejected') throw walk.reason;
  return round;
}

/** Steps one webhook takes in one space in one round, at most: a round ends even while changes keep coming. */
const MAX_STEPS_PER_ROUND = 1_000;
