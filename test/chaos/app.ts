/**
 * The app a chaos run serves and its clients run: mutators whose effects make exactly-once
 * checkable. Every mutation writes its record (`m/<client>/<id>`) and counts (`count/<client>`):
 * one applied twice counts twice but leaves one record. `scratch` also writes or deletes a key of
 * its client's own (`s/<client>/<n>`), so patches carry deletes and tombstones pile up for
 * housekeeping. The same source runs in the real client (typed against its transaction).
 * `edit` is the editors' (restore-check.ts), called from the backend door only: it sets or deletes
 * one key under `doc/` and nothing else, so that restores and reverts of `doc/` leave the
 * counting clients' data alone.
 */
import type { WriteTransaction } from 'replicache';

export const chaosMutators = {
  inc: async (tx: WriteTransaction) => {
    await applied(tx);
  },
  scratch: async (tx: WriteTransaction, { n, del }: { n: number; del: boolean }) => {
    await applied(tx);
    const key = `s/${tx.clientID}/${n}`;
    if (del) await tx.del(key);
    else await tx.set(key, { n, at: tx.mutationID });
  },
  edit: async (tx: WriteTransaction, { key, value }: { key: string; value: { user: string; n: number } | null }) => {
    if (value === null) await tx.del(key);
    else await tx.set(key, value);
  },
};

/** Every mutation's mark: its record, and its client's counter. */
async function applied(tx: WriteTransaction): Promise<void> {
  const key = `count/${tx.clientID}`;
  await tx.set(`m/${tx.clientID}/${tx.mutationID}`, 1);
  await tx.set(key, (((await tx.get(key)) as number | undefined) ?? 0) + 1);
}

export const DAY = 24 * 60 * 60 * 1000;

/** Idle groups and tombstones go after a week of the servers' clock, which the run moves on. */
export const RETENTION = { clientGroupsMs: 7 * DAY, tombstonesMs: 7 * DAY };
