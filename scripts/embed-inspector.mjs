// Writes src/inspector/ui/assets.ts from the inspector's page files beside it: index.html,
// login.html and app.css as they are, and app.js with the modules it imports (ui/*.js,
// ui/pages/*.js) bundled into one file by esbuild, at development time. The package ships them
// inside its code, so the page needs no file system and no CDN wherever the server runs (Workers
// and edge functions have no files), and the package no build step of its own. The bundle is
// not minified, so the served code stays readable in devtools; esbuild drops ordinary comments.
// Run after changing a page file: `node scripts/embed-inspector.mjs`; a test
// (test/inspector/assets.test.ts) fails while assets.ts is behind them.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

const ui = fileURLToPath(new URL('../src/inspector/ui/', import.meta.url));
export const FILES = { INDEX_HTML: 'index.html', LOGIN_HTML: 'login.html', APP_JS: 'app.js', APP_CSS: 'app.css' };

/** What assets.ts should hold now. */
export function embedded() {
  const lines = ['// Written by scripts/embed-inspector.mjs from the files beside it (app.js bundled with its modules): edit those, not this.', ''];
  for (const [name, file] of Object.entries(FILES))
    lines.push(`/** ${file} */`, `export const ${name} = ${JSON.stringify(name === 'APP_JS' ? bundle() : readFileSync(ui + file, 'utf8'))};`, '');
  return lines.join('\n');
}

/** app.js with every module it imports, as one ES module: the page loads one file, and nothing in it imports. */
function bundle() {
  const { outputFiles } = buildSync({
    entryPoints: [ui + 'app.js'],
    bundle: true,
    format: 'esm',
    write: false,
    target: 'es2022',
    legalComments: 'none',
    charset: 'utf8',
    absWorkingDir: ui,
  });
  return outputFiles[0].text;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(ui + 'assets.ts', embedded());
  console.log('wrote src/inspector/ui/assets.ts');
}
