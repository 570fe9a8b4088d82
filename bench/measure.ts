/** How long to sample one operation: at least `minIterations` and at least `minMs` of timed work. */
export interface SamplePlan {
  warmup: number;
  minIterations: number;
  minMs: number;
  /** A cap, so a very fast operation does not sample forever. */
  maxIterations: number;
}

/**
 * Times `run` once per iteration, on an input `prepare` makes outside the timer (a `Request` body
 * is a one-shot stream, so every iteration needs a new one; building it is the client's cost).
 * Warm-up iterations run first, untimed, so the JIT has settled. Returns milliseconds per run.
 */
export async function sample<T>(plan: SamplePlan, prepare: () => T, run: (input: T) => Promise<void>): Promise<number[]> {
  for (let i = 0; i < plan.warmup; i++) await run(prepare());
  const times: number[] = [];
  let total = 0;
  while (times.length < plan.maxIterations && (times.length < plan.minIterations || total < plan.minMs)) {
    const input = prepare();
    const start = performance.now();
    await run(input);
    const elapsed = performance.now() - start;
    times.push(elapsed);
    total += elapsed;
  }
  return times;
}

/** The `q` quantile (0..1) of `values`, nearest rank. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

export const median = (values: readonly number[]): number => quantile(values, 0.5);

/** Collects garbage between sections, so one section's garbage is not billed to the next. */
export function collectGarbage(): void {
  globalThis.gc?.();
}

/** MiB of V8 heap in use, after a collection. */
export function heapMiB(): number {
  collectGarbage();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

/** Progress goes to stderr, so stdout holds only the final table. */
export function progress(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}
