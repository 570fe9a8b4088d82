import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// The garbage collector, without starting the test process with --expose-gc.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Bytes of memory in use (heap and external) after a full garbage collection. */
export function memoryInUse(): number {
  gc();
  const { heapUsed, external } = process.memoryUsage();
  return heapUsed + external;
}
