// `npm test` runs this first: says what the full suite is about to do and for how long, since its
// first minutes print little (the typecheck, then the package packed for the e2e tests), and
// says so at once when this Node is below the package's floor, rather than after failures.
import { readFileSync } from 'node:fs';

const { engines } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const floor = engines.node.replace(/^>=/, '');
const below = compare(process.versions.node, floor) < 0;
console.log(`viewsync's full suite on Node ${process.version}: the typecheck, then the unit, integration, e2e and workerd projects, in that order
(vitest.config.ts). It takes about 18 minutes on 2 cores; \`npm run test:unit\` (about 35 s) is the one to run first.`);
if (below) console.warn(`Node ${process.version} is below the package's floor (${engines.node}): run the suite on Node ${floor} or later.`);

/** -1, 0 or 1 as release `a` (`x.y.z`) is older, the same or newer than `b` (`x.y` or `x.y.z`). */
function compare(a, b) {
  const [x, y] = [a, b].map((release) => release.split('.').map(Number));
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) < (y[i] ?? 0) ? -1 : 1;
  return 0;
}
