// The package.json that npm publishes, without what only this repository needs.
// `node scripts/pack-manifest.mjs strip` (prepack) keeps the full file as package.json.dev and
// writes the lean one; `restore` (postpack) puts the full one back, as does a failed pack's next
// `strip`, so the full file is never lost.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

const [full, kept] = ['package.json', 'package.json.dev'];
// optionalDependencies holds better-sqlite3 for this repository's tests only: optional so that
// `npm ci` goes on where it cannot build (the demo runs on node:sqlite); an app that wants it
// installs it itself (it is an optional peer).
const DEV_ONLY = ['scripts', 'devDependencies', 'optionalDependencies', 'allowScripts', 'overrides'];

if (process.argv[2] === 'strip') {
  if (existsSync(kept)) renameSync(kept, full); // a pack that failed before its postpack
  const manifest = JSON.parse(readFileSync(full, 'utf8'));
  renameSync(full, kept);
  for (const field of DEV_ONLY) delete manifest[field];
  writeFileSync(full, `${JSON.stringify(manifest, null, 2)}\n`);
} else if (process.argv[2] === 'restore') {
  if (existsSync(kept)) renameSync(kept, full);
} else {
  throw new Error('usage: node scripts/pack-manifest.mjs strip|restore');
}
