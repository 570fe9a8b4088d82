#!/usr/bin/env node
// `npm create viewsync@latest [folder]` runs this: it writes a viewsync app into the folder
// (my-viewsync-app by default) and prints what to run next. It asks nothing, so it runs the same
// in a terminal, a script or CI.
import { cpSync, existsSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';

const DEFAULT_FOLDER = 'my-viewsync-app';
const USAGE = 'Usage: npm create viewsync@latest [folder]   (default folder: my-viewsync-app)';

const [folder = DEFAULT_FOLDER, ...extra] = process.argv.slice(2);
if (folder === '--help' || folder === '-h') {
  console.log(USAGE);
  process.exit(0);
}
if (folder.startsWith('-') || extra.length > 0) fail(`Unexpected ${folder.startsWith('-') ? folder : extra[0]}. ${USAGE}`);
const target = resolve(folder);
if (existsSync(target) && (!statSync(target).isDirectory() || readdirSync(target).length > 0)) {
  fail(`${folder} already exists and is not an empty folder: name a new one, e.g. npm create viewsync@latest my-other-app`);
}

cpSync(new URL('template', import.meta.url), target, { recursive: true });
// npm leaves any file named .gitignore out of a package, so the template's is named without the dot.
renameSync(join(target, 'gitignore'), join(target, '.gitignore'));
writeFileSync(join(target, 'package.json'), `${JSON.stringify(manifest(packageName(basename(target))), null, 2)}\n`);

console.log(`Wrote a viewsync app in ${folder}. Next:

  cd ${folder.includes(' ') ? JSON.stringify(folder) : folder} && npm install && npm run dev

then open the address it prints in two browsers: what you add in one shows in the other.`);

/** The new project's package.json. */
function manifest(name) {
  return {
    name,
    version: '0.1.0',
    private: true,
    type: 'module',
    // `dev` restarts the server on each edit; `start` runs it once, as in production.
    scripts: { dev: 'tsx watch server.ts', start: 'tsx server.ts', typecheck: 'tsc' },
    // SQLite through node:sqlite, built into Node 22.15 and later: no native build to install.
    engines: { node: '>=22.15' },
    dependencies: {
      esbuild: '^0.27.3',
      replicache: '^15.3.0',
      tsx: '^4.23.15',
      // The mutators check their args with it: the same release viewsync itself uses.
      valibot: '^1.5.0',
      viewsync: '^0.2.0',
    },
    devDependencies: { '@types/node': '^22.15.0', typescript: '^5.9.3' },
    // npm asks a project to name the packages whose install scripts it lets run: esbuild's checks
    // its binary (the only one in the app's tree).
    allowScripts: { esbuild: true },
  };
}

/** A package name npm accepts, from the folder's name. */
function packageName(base) {
  return (
    base
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[._-]+/, '') || DEFAULT_FOLDER
  );
}

function fail(message) {
  console.error(message);
  process.exit(1);
}
