/**
 * What a store of a routed deployment knows of one space, kept at the space's route key
 * (`r/<space>/`, see src/sync/version/keys.ts) in that store. At any moment exactly one store holds the
 * copy in use: the one whose record says `here`, or the space's home when it holds no record.
 * A move changes records in a fixed order (src/route/move-space.ts) so that this stays true
 * whenever the move stops, a kill -9 included:
 *
 * 1. target `incoming` (a copy is being made there; in use: the source);
 * 2. source `moving` (writes wait until `until`; reads go on);
 * 3. target `incoming` with `complete` (the copy has every change up to the freeze);
 * 4. source `moved`: the commit point, after which the target's copy is the one in use;
 * 5. target `here` with `from` (promoted; the source's rows are still to be removed);
 * 6. target `here`, once the source's rows are gone.
 *
 * A router that finds step 4 done and step 5 not does step 5 itself, so no move killed after its
 * commit point leaves a space without a copy in use.
 */
export type RouteRecord =
  | { state: 'here'; from?: string | undefined; move?: string | undefined }
  | { state: 'moving'; to: string; move: string; until: number }
  | { state: 'moved'; to: string; move: string }
  | { state: 'incoming'; from: string; move: string; complete?: number | undefined };

/** The record at a route key, checked: a store's row that is not one (written by hand?) is refused, not guessed at. */
export function routeRecordOf(value: unknown, space: string, store: string): RouteRecord | undefined {
  if (value === undefined) return undefined;
  const record = value as Partial<Record<string, unknown>> | null;
  const state = record?.state;
  const ok =
    typeof record === 'object' &&
    record !== null &&
    (state === 'here' ||
      (state === 'moving' && typeof record.to === 'string' && typeof record.move === 'string' && typeof record.until === 'number') ||
      (state === 'moved' && typeof record.to === 'string' && typeof record.move === 'string') ||
      (state === 'incoming' && typeof record.from === 'string' && typeof record.move === 'string'));
  if (!ok)
    throw new Error(`The route record of space ${JSON.stringify(space)} in store ${JSON.stringify(store)} is not one viewsync wrote: ${JSON.stringify(value)}`);
  return record as RouteRecord;
}

/**
 * A refusal or failure of the route layer that its caller can act on: what the stores hold
 * contradicts what a router was told (a placement, a directory), a space is not there, another
 * move of it runs. Its message says what is wrong and what to do, and whether anything was done.
 */
export class RouteError extends Error {
  override name = 'RouteError';
}
