/** The feed soak's judge (feed-check.ts) on feeds made by hand: a clean one passes, each fault it exists to catch is caught. */
import { describe, expect, it } from 'vitest';
import type { FeedChange } from '../../src/backend.js';
import { judgeFeeds, type Writer } from './feed-check.js';

const change = (version: number, n: number, seq = 0): FeedChange => ({
  space: 's',
  version,
  seq,
  id: `s:${version}:${seq}`,
  cursor: `${version}.${seq}`,
  at: 0,
  by: { kind: 'backend', call: 'transact', userID: null },
  op: 'set',
  key: `soak/${n % 1000}`,
  after: n,
});
/** Two writers of `s`: one commits 0, 2, 4…, the other 1, 3, 5…; each has asked for three and been told of them all. */
const writers = (): Writer[] => [
  { index: 0, space: 's', next: 3, acknowledged: [0, 2, 4], unanswered: 0 },
  { index: 1, space: 's', next: 3, acknowledged: [1, 3, 5], unanswered: 0 },
];
const feed = [change(1, 0), change(2, 1), change(3, 2), change(4, 3), change(5, 4), change(6, 5)];
const details = (changes: FeedChange[], who = writers()) => judgeFeeds(new Map([['s', changes]]), who).map(({ detail }) => detail);

describe('judging the feed soak', () => {
  it('passes one change a version, every acknowledged commit, each writer in order; a skip ahead is counted, not a gap', () => {
    expect(details(feed)).toEqual([]);
    const skips = { count: 0 };
    expect(
      judgeFeeds(
        new Map([['s', [...feed.slice(0, 3), ...feed.slice(3).map((each, i) => change(9_000 + i, each.op === 'set' ? (each.after as number) : 0))]]]),
        writers(),
        skips,
      ),
    ).toEqual([]);
    expect(skips.count).toBe(1);
    // A commit whose answer was cut off may be in the feed, or not.
    const cut = writers();
    cut[1]!.acknowledged.pop();
    expect(details(feed.slice(0, 5), cut)).toEqual([]);
    // …and one in flight when its answer was cut may commit after the writer's next.
    const late = writers();
    late[0]!.acknowledged = [0, 4];
    expect(details([change(1, 0), change(2, 1), change(3, 4), change(4, 3), change(5, 2), change(6, 5)], late)).toEqual([]);
  });

  it("catches an acknowledged commit missing, a version out of line, a commit twice, one no writer made, and a writer's acknowledged commits reordered", () => {
    expect(details([...feed.slice(0, 2), ...feed.slice(3).map((each) => ({ ...each, version: each.version - 1 }))])).toEqual([
      '1 acknowledged commits of s are not in its feed, the first 2',
    ]);
    expect(details([...feed.slice(0, 3), { ...feed[3]!, version: 3, seq: 1 }, ...feed.slice(4)])).toEqual(['the feed of s has 3.1 after version 3']);
    expect(details([...feed, change(7, 4)])).toEqual(['the feed of s holds commit 4 twice']);
    expect(details([...feed, change(7, 6)])).toEqual([expect.stringMatching(/^the feed of s holds a change no writer made: .*"after":6/)]);
    expect(details([change(1, 2), change(2, 1), change(3, 0), change(4, 3), change(5, 4), change(6, 5)])).toEqual([
      "the feed of s has writer 0's commit 0 after its 2",
    ]);
  });
});
