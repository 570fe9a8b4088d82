/**
 * The feed soak's judge (feed-soak.ts): each space's feed against what its writers asked for and
 * were told was committed.
 */
import type { FeedChange } from '../../src/backend.js';
import type { Anomaly } from './checker.js';

/** One writer: its commits are `n = index + writers × k`, for k = 0, 1, 2… in order; `next` is the first k not yet asked for. */
export interface Writer {
  index: number;
  space: string;
  next: number;
  acknowledged: number[];
  unanswered: number;
}

/** Changes out of line, repeats, strangers and reordering in each space's feed, and acknowledged commits it lacks; counts versions skipped ahead in `skips`. */
export function judgeFeeds(
  feeds: ReadonlyMap<string, readonly FeedChange[]>,
  writers: readonly Pick<Writer, 'index' | 'space' | 'next' | 'acknowledged'>[],
  skips = { count: 0 },
): Anomaly[] {
  const anomalies: Anomaly[] = [];
  const add = (detail: string) => anomalies.push({ kind: 'feed', detail });
  const count = writers.length;
  const acknowledged = new Set(writers.flatMap((writer) => writer.acknowledged));
  for (const [space, feed] of feeds) {
    const seen = new Set<number>();
    const last = new Map<number, number>();
    let gaps = 0;
    let strangers = 0;
    let backwards = 0;
    let version = 0;
    for (const change of feed) {
      // One change a version, each after the last. A version may skip ahead (skipped-versions.ts:
      // the first write after a database restarted or the space moved to another store does, so
      // that no version a lost commit took names other data); no commit is lost by it, which the
      // acknowledged commits below and the replay (webhook-check.ts) show.
      if (change.version <= version || change.seq !== 0) {
        if (gaps++ === 0) add(`the feed of ${space} has ${change.version}.${change.seq} after version ${version}`);
      } else if (change.version > version + 1) skips.count++;
      version = change.version;
      const n = change.op === 'set' ? change.after : undefined;
      const writer = typeof n === 'number' ? writers[n % count] : undefined;
      if (
        change.op !== 'set' ||
        typeof n !== 'number' ||
        writer === undefined ||
        writer.space !== space ||
        change.key !== `soak/${n % 1000}` ||
        n >= writer.index + count * writer.next
      ) {
        if (strangers++ === 0) add(`the feed of ${space} holds a change no writer made: ${JSON.stringify(change).slice(0, 200)}`);
        continue;
      }
      if (seen.has(n)) add(`the feed of ${space} holds commit ${n} twice`);
      seen.add(n);
      // Order is judged among acknowledged commits: one whose answer was cut off may still have
      // committed after the writer's next request (it was in flight), as with any store.
      if (!acknowledged.has(n)) continue;
      if ((last.get(writer.index) ?? -1) > n && backwards++ === 0)
        add(`the feed of ${space} has writer ${writer.index}'s commit ${n} after its ${last.get(writer.index)}`);
      last.set(writer.index, n);
    }
    if (gaps > 1) add(`…and ${gaps - 1} more changes out of line in ${space}`);
    if (strangers > 1) add(`…and ${strangers - 1} more changes no writer made in ${space}`);
    if (backwards > 1) add(`…and ${backwards - 1} more reorderings in ${space}`);
    const lost = writers.filter((writer) => writer.space === space).flatMap((writer) => writer.acknowledged.filter((n) => !seen.has(n)));
    if (lost.length > 0) add(`${lost.length} acknowledged commits of ${space} are not in its feed, the first ${lost[0]}`);
  }
  return anomalies;
}
