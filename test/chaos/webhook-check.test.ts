/** The chaos suite's judge of webhooks (webhook-check.ts) on records made by hand: clean passes, each fault it exists to catch is caught. */
import { describe, expect, it } from 'vitest';
import type { JSONValue } from '../../src/index.js';
import type { FeedChange } from '../../src/backend.js';
import { judgeWebhooks } from './webhook-check.js';

const change = (version: number, key: string, value: number | undefined): FeedChange => ({
  space: 's',
  version,
  seq: 0,
  id: `s:${version}:0`,
  cursor: `${version}.0`,
  at: 0,
  by: { kind: 'backend', call: 'transact', userID: null },
  ...(value === undefined ? { op: 'del', key, before: 0 } : { op: 'set', key, after: value }),
});
const feed = [change(1, 'a', 1), change(2, 'b', 2), change(3, 'a', undefined)];
const truth = new Map([['s', new Map<string, JSONValue>([['b', 2]])]]);

/** What a receiver got: each change's first arrival in order, and the delivery IDs it came under. */
function got(arrivals: FeedChange[], ids: Record<string, string[]> = {}) {
  return { arrivals, deliveriesOf: new Map(arrivals.map((each) => [each.id, new Set(ids[each.id] ?? ['d1'])])) };
}

describe('judging webhooks in a chaos run', () => {
  it('passes every change delivered once, in order, under one ID each, the feed replaying to the data', () => {
    expect(judgeWebhooks(got(feed, { 's:2:0': ['d1'] }), new Map([['s', feed]]), truth)).toEqual([]);
  });

  it('catches a change never delivered, one out of order, a phantom, one under two IDs, and a feed that is not the data', () => {
    const details = (anomalies: Array<{ detail: string }>) => anomalies.map(({ detail }) => detail);
    expect(details(judgeWebhooks(got([feed[0]!, feed[2]!]), new Map([['s', feed]]), truth))).toEqual([
      '1 of the 3 changes of s were never delivered, the first s:2:0',
    ]);
    expect(details(judgeWebhooks(got([feed[1]!, feed[0]!, feed[2]!]), new Map([['s', feed]]), truth))).toEqual([
      "changes of s first arrived out of the feed's order, at arrival 1",
    ]);
    expect(details(judgeWebhooks(got([...feed, change(4, 'c', 4)]), new Map([['s', feed]]), truth))).toEqual([
      '1 delivered changes are not in the feed, the first s:4:0',
    ]);
    expect(details(judgeWebhooks(got(feed, { 's:1:0': ['d1', 'd2'] }), new Map([['s', feed]]), truth))).toEqual([
      '1 changes came under more than one delivery ID, the first s:1:0 under d1, d2',
    ]);
    expect(details(judgeWebhooks(got(feed), new Map([['s', feed]]), new Map([['s', new Map<string, JSONValue>([['b', 3]])]])))).toEqual([
      'the feed of s, replayed, is not its data',
    ]);
  });
});
