import type { SyncContext } from '../context/context.js';
import type { Storage } from '../storage/types.js';
import { getMany } from '../storage/write-buffer.js';
import { type DeliveryState, deliveryDueAt } from '../sync/feed/deliveries.js';
import { META_PREFIX, SpaceKeys, spaceOfMeta } from '../sync/version/keys.js';
import type { Meta } from '../sync/version/records.js';
import { type Hook, hooksOf } from './webhooks.js';
import { recordOf } from '../storage/records.js';

/**
 * The webhooks' safety net: which webhooks have something due in which spaces, read from the
 * store a page of spaces per read, so that a sweep costs two reads per thousand spaces rather
 * than a transaction per space, and wakes only what is due.
 */

/** A webhook due in a space, and from when. */
export interface DueDelivery {
  space: string;
  hook: Hook;
  at: number;
}

/**
 * Calls `each` for every webhook of `ctx` with something due in a space of its store, or due
 * later (a retry, another instance's lease), as of `now`: the spaces' meta records are read a
 * page per read-only transaction, and the delivery states of each page in one more (no write lock).
 */
export async function sweepDeliveries(ctx: SyncContext, now: number, each: (due: DueDelivery) => void): Promise<void> {
  const parts = ctx.storage.parts;
  if (parts === undefined) return sweepStore(ctx, ctx.storage, now, each);
  // Each part on its own (one down fails only its own spaces), and a space only where its copy is in use.
  const failures: unknown[] = [];
  for (const [name, part] of Object.entries(parts.stores)) {
    await sweepStore(ctx, part, now, each, (spaces) => parts.inUse(name, spaces)).catch((error: unknown) => failures.push(error));
  }
  if (failures.length > 0) throw failures[0];
}

async function sweepStore(
  ctx: SyncContext,
  storage: Storage,
  now: number,
  each: (due: DueDelivery) => void,
  inUse?: (spaces: string[]) => Promise<string[]>,
): Promise<void> {
  // A page of meta records at a time, each page in a read-only transaction of its own: memory and each transaction stay bounded.
  for (let after: string | undefined; ; ) {
    const start = after === undefined ? undefined : { key: after, exclusive: true };
    const rows = await storage.transaction((tx) => tx.scan({ prefix: META_PREFIX, start, limit: PAGE }), { readOnly: true });
    const metas = new Map(rows.map(([key, value]) => [spaceOfMeta(key), recordOf<Meta>(value)]));
    const spaces = inUse ? await inUse([...metas.keys()]) : [...metas.keys()];
    const wanted = spaces.flatMap((space) => hooksOf(ctx, space).map((hook) => ({ space, hook, key: new SpaceKeys(space).delivery(hook.name) })));
    if (wanted.length > 0) {
      // Read after the metas: a delivery made since shows as done, and a commit made since is left to the notifier or the next sweep.
      const states = await storage.transaction(
        (tx) =>
          getMany(
            tx,
            wanted.map(({ key }) => key),
          ),
        { readOnly: true },
      );
      wanted.forEach(({ space, hook }, i) => {
        const at = deliveryDueAt(metas.get(space), states[i] as DeliveryState | undefined, now);
        if (at !== undefined) each({ space, hook, at });
      });
    }
    if (rows.length < PAGE) return;
    after = rows.at(-1)![0];
  }
}

/** Spaces whose delivery states are read in one transaction. */
const PAGE = 1_000;
