import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** Debian's Chromium (scripts/install-chromium.sh): the browser tests skip without it. */
export const CHROMIUM = '/usr/bin/chromium';

/** Whether Chromium is here; says so once when it is not, naming the test that skips. */
export function hasChromium(test: string): boolean {
  const here = existsSync(CHROMIUM);
  if (!here) console.log(`Skipping ${test}: no Chromium at ${CHROMIUM} (apt-get install chromium).`);
  return here;
}

/** Chromium headless as the browser tests run it: no sandbox (root in CI), nothing fetched in the background; `args`: more switches. */
export function launchChromium(args: readonly string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', ...args],
  });
}
