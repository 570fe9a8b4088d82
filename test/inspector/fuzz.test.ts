/**
 * Hostile input to the inspector's API, from a logged-in session (the secret is the operator's,
 * but a typo or a script's bug is not): any query to any read, any JSON to any action, and never
 * a 500; an action that is refused changes nothing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { handleRequest, memoryStorage, type SyncContext } from '../../src/index.js';
import { inspect } from '../../src/ops.js';
import { READS } from '../../src/inspector/reads.js';
import { ACTIONS } from '../../src/inspector/actions.js';
import { inspectorApp, pushAs, SECRET } from './app.js';

const RUNS = Number(process.env.FC_RUNS ?? 100);
const ORIGIN = 'http://inspect.test';

const text = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom('', 'acme', '0', '-1', '1.5', '1e309', 'NaN', '99999999999999999999', 'list/', '__proto__', '%', 'x'.repeat(5000)),
  fc.integer().map(String),
);
const params = fc.dictionary(fc.constantFrom('space', 'prefix', 'after', 'before', 'limit', 'version', 'key', 'user', 'group'), text, { maxKeys: 5 });
const json = fc.jsonValue({ maxDepth: 3 });
/** Names that are no endpoint: any string, and those every object has. */
const NAMES = fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('constructor', '__proto__', 'toString', 'hasOwnProperty', 'webhooks/', 'api/spaces'));
const body = fc.oneof(
  json,
  fc.record(
    {
      space: fc.oneof(text, json),
      name: fc.oneof(text, json),
      to: fc.oneof(fc.integer(), json),
      prefix: fc.oneof(text, json),
      dryRun: fc.oneof(fc.boolean(), json),
      delivery: fc.oneof(text, json),
      from: text,
      to2: text,
      cause: fc.oneof(json, fc.record({ userID: text, versions: json, since: json, mutation: json })),
      onConflict: fc.oneof(text, json),
    },
    { requiredKeys: [] },
  ),
);

describe('the inspector API under hostile input', () => {
  it('answers any query to any read with 200 or a 4xx saying why, never a 500', async () => {
    const { handle, cookie, errors } = await app();
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.constantFrom(...Object.keys(READS)), NAMES), params, async (name, query) => {
        const response = await handle(
          new Request(`${ORIGIN}/_inspect/api/${name}?${new URLSearchParams(query)}`, { headers: { cookie, 'x-viewsync-inspector': '1' } }),
        );
        const answer = await response.json();
        expect(
          response.status === 200 || (response.status >= 400 && response.status < 500 && typeof answer.error === 'string'),
          `${name} ${JSON.stringify(query)}: ${response.status} ${JSON.stringify(answer).slice(0, 300)}`,
        ).toBe(true);
      }),
      { numRuns: RUNS * 3 },
    );
    expect(errors).toEqual([]);
  });

  it('answers any body to any action without a 500, and a refused one changes nothing', async () => {
    const { ctx, handle, cookie, errors } = await app();
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.constantFrom(...Object.keys(ACTIONS)), NAMES), body, async (name, sent) => {
        const before = await versionOf(ctx);
        const response = await handle(
          new Request(`${ORIGIN}/_inspect/api/${name}`, {
            method: 'POST',
            headers: { cookie, 'x-viewsync-inspector': '1', origin: ORIGIN, 'content-type': 'application/json' },
            body: JSON.stringify(sent),
          }),
        );
        const answer = await response.json();
        expect(response.status < 500, `${name} ${JSON.stringify(sent).slice(0, 300)}: ${response.status} ${JSON.stringify(answer).slice(0, 300)}`).toBe(true);
        if (response.status !== 200) expect(await versionOf(ctx)).toBe(before);
      }),
      { numRuns: RUNS * 3 },
    );
    expect(errors).toEqual([]);
  });
});

async function app() {
  const errors: unknown[] = [];
  const ctx = inspectorApp(memoryStorage(), { onError: (error) => errors.push(error) });
  const handle = (request: Request) => handleRequest(request, ctx);
  for (let i = 0; i < 3; i++)
    await pushAs(handle, 'acme', 'ann', [
      { name: 'put', args: { key: `list/${i}`, value: i } },
      { name: 'put', args: { key: `member/ann/${i}`, value: true } },
    ]);
  const login = await handle(
    new Request(`${ORIGIN}/_inspect/login`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      body: `secret=${SECRET}`,
    }),
  );
  return { ctx, handle, cookie: login.headers.get('set-cookie')!.split(';')[0]!, errors };
}

async function versionOf(ctx: SyncContext): Promise<number> {
  return (await inspect(ctx, 'acme')).version;
}
