/**
 * Helpers for driving the TodoMVC demo (examples/todo) in Chromium: its server as a child
 * process, a page per browser context (a client group each), and what a page shows.
 */
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { startCommand, type Started } from '../support/command.js';
import { ROOT } from '../package/packed.js';

export interface DemoServer extends Started {
  url: URL;
}

/** Starts `examples/todo/server.ts` on `port` (0: any) with its SQLite file in `dataDir`. */
export async function startDemo(port: number, dataDir: string): Promise<DemoServer> {
  const started = await startCommand(join(ROOT, 'node_modules', '.bin', 'tsx'), ['examples/todo/server.ts'], {
    cwd: ROOT,
    env: { PORT: String(port), DATA_DIR: dataDir },
    ready: /TodoMVC on viewsync: (\S+)/,
    timeoutMs: 30_000,
  });
  return Object.assign(started, { url: new URL(started.match[1]!) });
}

/** A problem a page reported: a console error or an uncaught exception. */
export interface PageError {
  page: string;
  text: string;
  /** Whether the test had the server stopped on purpose when it came. */
  serverDown: boolean;
}

/** Opens the app in a browser context of its own, recording its errors into `errors`. */
export async function openTodoPage(browser: Browser, url: URL, name: string, errors: PageError[], serverDown: () => boolean): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 800, height: 700 } })).newPage();
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push({ page: name, text: message.text(), serverDown: serverDown() });
  });
  page.on('pageerror', (error) => errors.push({ page: name, text: `${error.name}: ${error.message}`, serverDown: serverDown() }));
  await page.goto(url.href);
  await page.locator('.new-todo').waitFor();
  return page;
}

export async function addTodo(page: Page, text: string): Promise<void> {
  await page.fill('.new-todo', text);
  await page.press('.new-todo', 'Enter');
}

/** The texts of the items shown, in order. */
export function labels(page: Page): Promise<string[]> {
  return page.locator('.todo-list li label').allTextContents();
}

/** The texts of the items shown as completed, in order. */
export function completedLabels(page: Page): Promise<string[]> {
  return page.locator('.todo-list li.completed label').allTextContents();
}

/** The footer's count, as text ("2 items left"). */
export async function countText(page: Page): Promise<string> {
  return (await page.locator('.todo-count').textContent()) ?? '';
}

/** The item showing `text`. */
export function item(page: Page, text: string) {
  return page.locator('.todo-list li').filter({ has: page.getByText(text, { exact: true }) });
}
