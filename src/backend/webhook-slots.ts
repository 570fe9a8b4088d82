/**
 * How a process shares out its webhook deliveries. Each webhook has slots of its own, so a
 * receiver that is slow or hangs holds up only its own webhook's deliveries. While a receiver
 * fails, its webhook has one attempt in flight (a probe) rather than one per space, each waiting
 * out its timeout: a receiver that is down is not hammered, and its retries cost one connection.
 * A delivery that goes through gives the webhook its slots back.
 */

/** One webhook's attempts in flight, and whether its receiver is failing, as one process sees them. */
export class HookSlots {
  readonly #concurrency: number;
  #inFlight = 0;
  #failures = 0;

  constructor(concurrency: number) {
    this.#concurrency = concurrency;
  }

  /** Whether another attempt may start: one of `concurrency`, or the one probe while the receiver fails. */
  get free(): boolean {
    return this.#inFlight < (this.#failures > 0 ? PROBES : this.#concurrency);
  }

  /** Attempts that failed since the last delivery: the receiver is failing while there are any. */
  get failures(): number {
    return this.#failures;
  }

  /** Takes a slot for an attempt. */
  take(): void {
    this.#inFlight++;
  }

  /** Gives a slot back, told what the attempt came to: only a delivery or a failure says how the receiver is. */
  give(step: { kind: string }): void {
    this.#inFlight--;
    if (step.kind === 'delivered') this.#failures = 0;
    else if (step.kind === 'failed') this.#failures++;
  }
}

/**
 * Failures in a row after which a round of `deliverWebhooks` leaves a webhook's other spaces to
 * the next round: a receiver that hangs would otherwise hold the round for its timeout in every
 * space. Two, not one, so that a single batch its receiver refuses does not cut the round short.
 */
export const FAILURES_PER_ROUND = 2;

/** Attempts in flight for a webhook whose receiver is failing: enough to learn that it is back. */
const PROBES = 1;
