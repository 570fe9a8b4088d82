import { join } from 'node:path';
import type { Plugin } from 'esbuild';
import { ROOT } from '../package/packed.js';

/** An esbuild plugin that resolves `viewsync` and `viewsync/*` to the built package, as a user's bundler does. */
export const builtPackage: Plugin = {
  name: 'viewsync-dist',
  setup(pluginBuild) {
    pluginBuild.onResolve({ filter: /^viewsync(\/.*)?$/ }, ({ path }) => ({
      path: join(ROOT, 'dist', `${path === 'viewsync' ? 'index' : path.slice('viewsync/'.length)}.js`),
    }));
  },
};
