// Writes src/inspector/ui/assets.ts from the inspector's page files (index.html, login.html,
// app.js, app.css beside it): the package ships them inside its code, so the page needs no build
// step, no file system and no CDN wherever the server runs (Workers and edge functions have no
// files). Run after changing a page file: `node scripts/embed-inspector.mjs`; a test
// (test/inspector/assets.test.ts) fails while assets.ts is behind them.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ui = fileURLToPath(new URL('../src/inspector/ui/', import.meta.url));
export const FILES = { INDEX_HTML: 'index.html', LOGIN_HTML: 'login.html', APP_JS: 'app.js', APP_CSS: 'app.css' };

/** What assets.ts should hold now. */
export function embedded() {
  const lines = ['// Written by scripts/embed-inspector.mjs from the files beside it: edit those, not this.', ''];
  for (const [name, file] of Object.entries(FILES)) lines.push(`/** ${file} */`, `export const ${name} = ${JSON.stringify(readFileSync(ui + file, 'utf8'))};`, '');
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(ui + 'assets.ts', embedded());
  console.log('wrote src/inspector/ui/assets.ts');
}
