import type { SyncContext } from '../src/index.js';
import { drain } from '../src/context/drain.js';
import type { StopOptions } from './types.js';

/**
 * What every adapter's `stop()` does, around the runtime's own calls: drains `ctx`, runs `close`
 * (stop accepting, resolve once requests in flight are answered), and calls `force` if that takes
 * longer than `timeoutMs`. Without `force` (Deno has none once it is shutting down) it resolves at
 * the bound anyway; the process exiting then closes what is left.
 */
export async function stopGracefully(ctx: SyncContext, options: StopOptions, close: () => Promise<void>, force?: () => unknown): Promise<void> {
  const undrain = drain(ctx, options);
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const closed = close();
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), options.timeoutMs ?? 10_000)));
    if ((await Promise.race([closed, late])) !== 'late') return;
    if (force === undefined) return;
    await force();
    await closed;
  } finally {
    clearTimeout(timer);
    undrain();
  }
}
