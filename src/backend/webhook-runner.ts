import type { SyncContext } from '../context/context.js';
import { reportError } from '../context/context.js';
import { checkContext } from '../context/state.js';
import type { Unsubscribe } from '../poke/notifier.js';
import { deliverOnce, type Hook, hooksOf, type Step } from './webhooks.js';
import { HookSlots } from './webhook-slots.js';
import { sweepDeliveries } from './webhook-sweep.js';
import { deliverTogether } from './webhook-together.js';

/**
 * The continuous delivery of webhooks: what is due, by webhook and space, started as each
 * webhook's own slots allow (webhook-slots.ts), each retry at its time; woken at once by the
 * context's own changes and by those its notifier hears of (other contexts, other instances),
 * so that delivery work follows what changed; a sweep (webhook-sweep.ts) catches the rest.
 */

/** Options for {@link startWebhooks}. */
export interface WebhookRunnerOptions {
  /**
   * How often the store is read for deliveries due that nothing announced (a change made by a
   * process whose notifier does not reach this one, such as the CLI; a notice lost; a retry left
   * by an instance that stopped), in milliseconds. Changes made through this context, and those
   * its notifier hears of (`pokes.notifier`: another context in this process, or with
   * `postgresNotifier` another instance), are delivered at once. A sweep reads the spaces' meta
   * records and delivery states a thousand spaces per read, without a write lock. Default: 5,000.
   */
  sweepMs?: number;
  /**
   * Deliveries in flight at once for each webhook, across its spaces: a slow or hanging receiver
   * holds only its own webhook's, and one whose last attempt failed gets one at a time. Default: 8.
   */
  concurrency?: number;
}

/** A running delivery: stop it before the process exits (it waits for deliveries in flight). */
export interface WebhookRunner {
  stop(): Promise<void>;
}

/**
 * Delivers the context's webhooks for as long as the process runs: at once after each change
 * committed through `ctx` or heard of from its notifier, every `sweepMs` for the rest, and each
 * retry when due. Run it in every
 * instance or in one: a lease in the store gives each batch to one instance at a time, and an
 * instance killed mid-delivery leaves its batch to another once the lease runs out (the
 * receiver then gets it again, under the same delivery ID).
 *
 * @example
 * const webhooks = startWebhooks(ctx);
 * process.once('SIGTERM', () => webhooks.stop());
 */
export function startWebhooks(ctx: SyncContext, options: WebhookRunnerOptions = {}): WebhookRunner {
  checkContext(ctx);
  const runner = new Runner(ctx, options.sweepMs ?? 5_000, options.concurrency ?? 8);
  return { stop: () => runner.stop() };
}

/** One webhook's deliveries in a runner: what is due and when (the context's clock), by space; what runs; its slots. */
interface Lane {
  /** `look`: read first whether anything is due (heard of a change made elsewhere, which another instance may be delivering). */
  due: Map<string, { hook: Hook; at: number; look: boolean }>;
  running: Map<string, Promise<void>>;
  slots: HookSlots;
}

/** The continuous delivery of {@link startWebhooks}. */
class Runner {
  readonly #ctx: SyncContext;
  readonly #concurrency: number;
  readonly #owner = `runner-${crypto.randomUUID()}`;
  /** By webhook name. */
  readonly #lanes = new Map<string, Lane>();
  readonly #listener = (space: string) => this.#wake(space, 0, false);
  /** A change heard from the notifier waits a moment and is looked at first: the instance that made it has likely delivered it, or holds its lease. */
  readonly #heard = (space: string) => this.#wake(space, HEARD_GRACE_MS, true);
  readonly #sweeper: ReturnType<typeof setInterval>;
  #unsubscribe: Promise<Unsubscribe | undefined>;
  #sweeping = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  constructor(ctx: SyncContext, sweepMs: number, concurrency: number) {
    this.#ctx = ctx;
    this.#concurrency = concurrency;
    ctx.state.changeListeners.add(this.#listener);
    this.#unsubscribe = this.#hear();
    this.#sweeper = setInterval(() => this.#sweep(), sweepMs);
    this.#sweep();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#ctx.state.changeListeners.delete(this.#listener);
    clearInterval(this.#sweeper);
    clearTimeout(this.#timer);
    // Not awaited: a notifier still connecting (its database down) must not hold up the stop.
    void this.#unsubscribe.then((unsubscribe) => unsubscribe?.());
    await Promise.allSettled([...this.#lanes.values()].flatMap((lane) => [...lane.running.values()]));
  }

  /** Listens to the notifier for changes of any space, made anywhere it reaches; a notifier that cannot say leaves them to the sweep. */
  async #hear(): Promise<Unsubscribe | undefined> {
    const notifier = this.#ctx.notifier;
    try {
      return await notifier.subscribeAll?.(this.#heard);
    } catch (error) {
      reportError(this.#ctx, error, { operation: 'webhook' });
      return undefined;
    }
  }

  /** Schedules what the store says is due; one sweep at a time, so that a slow store is not asked again and again. */
  #sweep(): void {
    if (this.#sweeping || this.#stopped) return;
    this.#sweeping = true;
    sweepDeliveries(this.#ctx, this.#ctx.clock(), ({ space, hook, at }) => this.#schedule(space, hook, at, false))
      .catch((error: unknown) => reportError(this.#ctx, error, { operation: 'webhook' }))
      .finally(() => {
        this.#sweeping = false;
        this.#pump();
      });
  }

  #wake(space: string, afterMs: number, look: boolean): void {
    const at = this.#ctx.clock() + afterMs;
    for (const hook of hooksOf(this.#ctx, space)) this.#schedule(space, hook, at, look);
    this.#pump();
  }

  #schedule(space: string, hook: Hook, at: number, look: boolean): void {
    if (this.#stopped) return;
    let lane = this.#lanes.get(hook.name);
    if (lane === undefined) this.#lanes.set(hook.name, (lane = { due: new Map(), running: new Map(), slots: new HookSlots(this.#concurrency) }));
    const due = lane.due.get(space);
    // The earlier wake is kept, with its own look: a sweep that saw a lease run out later says nothing of a change heard now.
    if (due === undefined || at < due.at) lane.due.set(space, { hook, at, look });
    else if (at === due.at && !look) due.look = false;
  }

  /** Starts what is due, as each webhook's slots allow, and sets a timer for the next. */
  #pump(): void {
    clearTimeout(this.#timer);
    if (this.#stopped) return;
    const now = this.#ctx.clock();
    let next = Infinity;
    for (const lane of this.#lanes.values()) next = Math.min(next, this.#start(lane, now));
    if (next !== Infinity) this.#timer = setTimeout(() => this.#pump(), Math.max(0, next - now));
  }

  /** Starts what of `lane` is due; returns when the rest is due, as far as it looked (a full lane looks again as an attempt ends). */
  #start(lane: Lane, now: number): number {
    let next = Infinity;
    // A webhook whose receiver takes several spaces a request gets them in groups, each group one
    // slot; a group not full waits `gatherMs` from its first space's time for more.
    let group: Array<{ space: string; hook: Hook; look: boolean; at: number }> = [];
    for (const [space, { hook, at, look }] of lane.due) {
      if (lane.running.has(space)) continue;
      if (at > now) {
        next = Math.min(next, at);
        continue;
      }
      if (group.length === 0 && !lane.slots.free) break;
      group.push({ space, hook, look, at });
      if (group.length >= hook.options.spacesPerDelivery) {
        this.#run(lane, group);
        group = [];
      }
    }
    if (group.length > 0) {
      const ready = Math.min(...group.map(({ at }) => at)) + gatherOf(group[0]!.hook);
      if (ready <= now) this.#run(lane, group);
      else next = Math.min(next, ready);
    }
    return next;
  }

  /** Runs one slot's attempt: one space's deliveries, or a group's together (even a group of one: a receiver gets one body shape); then schedules what each space comes to. */
  #run(lane: Lane, group: ReadonlyArray<{ space: string; hook: Hook; look: boolean }>): void {
    for (const { space } of group) lane.due.delete(space);
    lane.slots.take();
    const [first] = group;
    const hook = first!.hook;
    const steps: Promise<Map<string, Step>> =
      hook.options.spacesPerDelivery === 1
        ? deliverOnce(this.#ctx, first!.space, hook, this.#owner, BATCHES_PER_TURN, { checked: !first!.look }).then((step) => new Map([[first!.space, step]]))
        : deliverTogether(
            this.#ctx,
            hook,
            this.#owner,
            group.map(({ space }) => space),
            BATCHES_PER_TURN,
          );
    const run = steps
      .catch((error: unknown) => {
        reportError(this.#ctx, error, { operation: 'webhook', space: first!.space });
        return new Map<string, Step>(group.map(({ space }) => [space, { kind: 'wait', until: this.#ctx.clock() + 5_000 }]));
      })
      .then((steps) => {
        const now = this.#ctx.clock();
        for (const { space } of group) {
          const step = steps.get(space) ?? { kind: 'idle' };
          lane.running.delete(space);
          if (step.kind === 'delivered') this.#schedule(space, hook, now, false);
          else if (step.kind === 'failed' || step.kind === 'wait') this.#schedule(space, hook, step.until, false);
        }
        // The slot learns how the receiver did: a failure if any batch failed, else a delivery if any went.
        const kinds = new Set([...steps.values()].map(({ kind }) => kind));
        lane.slots.give({ kind: kinds.has('failed') ? 'failed' : kinds.has('delivered') ? 'delivered' : 'idle' });
        this.#pump();
      });
    for (const { space } of group) lane.running.set(space, run);
  }
}

/** How long a group of spaces not full waits for more: see `WebhookOptions.gatherMs` (none for one space a request). */
function gatherOf(hook: Hook): number {
  return hook.options.spacesPerDelivery > 1 ? hook.options.gatherMs : 0;
}

/** Milliseconds a change heard from the notifier waits before it is looked at: time for the instance that made it to claim it. */
const HEARD_GRACE_MS = 100;
/** Batches one webhook sends in one space before its slot goes to what else is due: a busy space does not hold one for ever. */
const BATCHES_PER_TURN = 10;
