/**
 * Webhooks in a chaos run (opt-in: `npm run chaos -- --webhooks`): every server delivers the
 * change feed of every space to a receiver in the runner, which answers some deliveries 500 on
 * purpose, while servers are killed and their store faulted. At the end, once every fault is
 * healed, the feed is read back from a server and judged against what the receiver got:
 *
 * - every change of the feed was delivered (no gap), and nothing the feed lacks (no phantom, a
 *   change of a commit that did not happen);
 * - in each space, changes first arrived in the feed's order (no reordering);
 * - a change delivered more than once came each time under one delivery ID (a lease taken over
 *   from a killed server sends the same batch again, under its ID);
 * - the feed, replayed, is the space's data (truth).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JSONValue } from '../../src/index.js';
import type { FeedChange, WebhookDeliveries, WebhookDelivery } from '../../src/backend.js';
import type { Anomaly } from './checker.js';
import type { Random } from './rng.js';

export const WEBHOOK_SECRET = 'chaos-webhook-secret-of-thirty-two-chars';
export const CHANGES_SECRET = 'chaos-changes-secret-of-thirty-two-chars';

export class ChaosReceiver {
  readonly #server: Server;
  /** Each change's first arrival, in order, and every delivery ID it came under. */
  readonly arrivals: FeedChange[] = [];
  readonly deliveriesOf = new Map<string, Set<string>>();
  requests = 0;
  refused = 0;

  private constructor(server: Server) {
    this.#server = server;
  }

  /** A receiver that answers 500 to a share `failRate` of requests, drawn from `rng`. */
  static async start(rng: Random, failRate: number): Promise<ChaosReceiver> {
    const receiver: ChaosReceiver = new ChaosReceiver(
      createServer(async (request, response) => {
        let body = '';
        for await (const chunk of request) body += chunk;
        receiver.requests++;
        if (rng.chance(failRate)) {
          receiver.refused++;
          return void response.writeHead(500).end();
        }
        // Several spaces' deliveries in one request with CHAOS_WEBHOOK_SPACES (`spacesPerDelivery`): each judged as its own.
        const parsed = JSON.parse(body) as WebhookDelivery | WebhookDeliveries;
        for (const delivery of 'deliveries' in parsed ? parsed.deliveries : [parsed]) {
          for (const change of delivery.changes) {
            let ids = receiver.deliveriesOf.get(change.id);
            if (ids === undefined) {
              receiver.deliveriesOf.set(change.id, (ids = new Set()));
              receiver.arrivals.push(change);
            }
            ids.add(delivery.delivery);
          }
        }
        response.writeHead(204).end();
      }),
    );
    await new Promise<void>((resolve) => receiver.#server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/hooks`;
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

/** The whole feed of `space`, read from `server`'s `GET …/changes`. */
export async function feedOf(server: string, space: string): Promise<FeedChange[]> {
  const changes: FeedChange[] = [];
  for (let after = '0', more = true; more; ) {
    const response = await fetch(`${server}changes?space=${encodeURIComponent(space)}&after=${after}&limit=10000`, {
      headers: { authorization: `Bearer ${CHANGES_SECRET}` },
      signal: AbortSignal.timeout(30_000),
    });
    if (response.status !== 200) throw new Error(`GET changes of ${space} answered ${response.status}: ${await response.text()}`);
    const page = (await response.json()) as { changes: FeedChange[]; cursor: string; more: boolean };
    changes.push(...page.changes);
    ({ cursor: after, more } = page);
  }
  return changes;
}

/** Judges what `receiver` got against each space's feed and data; the anomalies found. */
export function judgeWebhooks(
  receiver: Pick<ChaosReceiver, 'arrivals' | 'deliveriesOf'>,
  feeds: ReadonlyMap<string, FeedChange[]>,
  truth: ReadonlyMap<string, Map<string, JSONValue>>,
): Anomaly[] {
  const anomalies: Anomaly[] = [];
  const add = (detail: string) => anomalies.push({ kind: 'webhook', detail });
  const inFeed = new Set<string>();
  for (const [space, feed] of feeds) {
    const replay = new Map<string, JSONValue>();
    for (const change of feed) {
      inFeed.add(change.id);
      if (change.op === 'set') replay.set(change.key, change.after);
      else if (change.op === 'del') replay.delete(change.key);
    }
    const data = truth.get(space);
    if (data !== undefined && JSON.stringify([...replay].sort()) !== JSON.stringify([...data].sort())) add(`the feed of ${space}, replayed, is not its data`);
    const missed = feed.filter((change) => !receiver.deliveriesOf.has(change.id));
    if (missed.length > 0) add(`${missed.length} of the ${feed.length} changes of ${space} were never delivered, the first ${missed[0]!.id}`);
    const places = new Map(feed.map(({ id }, i) => [id, i]));
    const order = receiver.arrivals.flatMap(({ id }) => (places.has(id) ? [places.get(id)!] : []));
    const backwards = order.findIndex((place, i) => i > 0 && place < order[i - 1]!);
    if (backwards >= 0) add(`changes of ${space} first arrived out of the feed's order, at arrival ${backwards}`);
  }
  const phantoms = receiver.arrivals.filter((change) => feeds.has(change.space) && !inFeed.has(change.id));
  if (phantoms.length > 0) add(`${phantoms.length} delivered changes are not in the feed, the first ${phantoms[0]!.id}`);
  const rekeyed = [...receiver.deliveriesOf].filter(([, ids]) => ids.size > 1);
  if (rekeyed.length > 0)
    add(`${rekeyed.length} changes came under more than one delivery ID, the first ${rekeyed[0]![0]} under ${[...rekeyed[0]![1]].join(', ')}`);
  return anomalies;
}
