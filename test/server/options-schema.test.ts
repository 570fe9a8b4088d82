import { describe, expect, it } from 'vitest';
import { createContext, localNotifier, memoryStorage, type SyncOptions } from '../../src/index.js';
import { DEFAULT_LIMITS } from '../../src/ops.js';
import { ABSENT, OPTION_ENTRIES, parseOptions } from '../../src/context/options-schema.js';
import { testMutators } from '../support/helpers.js';

const base = (): SyncOptions => ({ storage: memoryStorage(), mutators: testMutators });
const SECRET = 'x'.repeat(40);

describe('the options schema', () => {
  it('every option, at every depth, has a default or is required, or says what leaving it out means', () => {
    const undeclared: string[] = [];
    const walk = (entries: Record<string, unknown>, where: string) => {
      for (const [key, rule] of Object.entries(entries)) {
        const path = `${where}${key}`;
        const r = rule as { type: string; default?: unknown; wrapped?: unknown };
        if (r.type === 'optional' && r.default === undefined && !ABSENT.has(r as object)) undeclared.push(path);
        for (const inner of groupsIn(r.type === 'optional' ? r.wrapped : rule)) walk(inner, `${path}.`);
      }
    };
    walk(OPTION_ENTRIES, '');
    expect(undeclared).toEqual([]);
    // The walk reaches the nested groups (else it would pass for want of looking).
    const seen: string[] = [];
    const list = (entries: Record<string, unknown>, where: string) => {
      for (const [key, rule] of Object.entries(entries)) {
        seen.push(`${where}${key}`);
        const r = rule as { type: string; wrapped?: unknown };
        for (const inner of groupsIn(r.type === 'optional' ? r.wrapped : rule)) list(inner, `${where}${key}.`);
      }
    };
    list(OPTION_ENTRIES, '');
    expect(seen).toEqual(
      expect.arrayContaining([
        'limits.bodyBytes',
        'pokes.maxStreams',
        'cors.maxAgeMs',
        'quotas.historyBytes',
        'changes.webhooks.gatherMs',
        'inspector.readOnly',
        'retention.historyMs',
      ]),
    );
  });

  it('a context made of no options but the two required has every field resolved, each default filled in', () => {
    const ctx = createContext(base());
    expect(ctx.limits).toEqual(DEFAULT_LIMITS);
    const days30 = 30 * 24 * 60 * 60 * 1000;
    expect(ctx.retention).toEqual({ clientGroupsMs: days30, tombstonesMs: days30, changesMs: days30, historyMs: days30, checkpointEvery: undefined });
    expect(ctx.pokes).toEqual({ heartbeatMs: 15_000, coalesceMs: 50, maxStreamsPerUser: 100, maxStreamAgeMs: 600_000, tokenTtlMs: 3_600_000 });
    expect(ctx.cors).toEqual({ origin: '*', maxAgeMs: 86_400_000 });
    expect([ctx.transactionPerMutation, ctx.shareReads, ctx.rates, ctx.changes, ctx.history, ctx.firstSync, ctx.inspector]).toEqual([
      false,
      true,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(typeof ctx.clock()).toBe('number');
    expect(typeof ctx.onError).toBe('function');
    expect(ctx.touchEveryMs).toBe(days30 / 10);
    expect(ctx.session).toEqual({ prefixIndex: false, maxKeyBytes: undefined, indexes: undefined, feed: false });
    expect(ctx.hub).toBeDefined();
    expect(ctx.notifier).toBeDefined();
    // ctx.options stays as given, for variants.
    expect(ctx.options).toEqual(base().storage ? { storage: ctx.storage, mutators: testMutators } : {});
    // The state is apart, and a spread carries none of it.
    expect(ctx.state.drains).toBe(0);
    expect(Object.keys(ctx)).not.toContain('state');
  });

  it('nested defaults are filled too, and what one option gives another (history as long as the change log) is resolved', () => {
    const notifier = localNotifier();
    const ctx = createContext({
      ...base(),
      retention: { changesMs: 1_000 },
      history: {},
      pokes: { notifier, maxStreams: 10 },
      changes: { webhooks: { mail: { url: 'https://example.com/hook', secret: SECRET } } },
      firstSync: {},
      inspector: { secret: SECRET },
      cors: { origin: ['https://app.example'] },
      rates: { pushesPerSecond: 2 },
      view: () => [''],
    });
    expect(ctx.retention.historyMs).toBe(1_000);
    expect(ctx.retention.checkpointEvery).toBeGreaterThan(0);
    expect(ctx.notifier).toBe(notifier);
    expect(ctx.changes?.webhooks?.mail).toMatchObject({
      maxBatch: 100,
      timeoutMs: 15_000,
      retryForMs: 3 * 24 * 60 * 60 * 1000,
      allowPrivateAddresses: false,
      spacesPerDelivery: 1,
      gatherMs: 100,
    });
    expect(ctx.firstSync?.pageBytes).toBe(4 * 1024 * 1024);
    expect(ctx.inspector?.readOnly).toBe(false);
    expect(ctx.cors).toEqual({ origin: ['https://app.example'], maxAgeMs: 86_400_000 });
    expect(ctx.rates).toEqual({ pushesPerSecond: 2, burstMs: 1_000, bucketsKept: 100_000 });
    expect(ctx.session).toMatchObject({ prefixIndex: true, feed: true });
    expect(createContext({ ...base(), pokes: false }).hub).toBeUndefined();
  });

  it('the options are checked at every depth, with a message naming the path', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ history: { checkpointEvery: 0 } }, /^history\.checkpointEvery must be a whole number of versions of at least 1, got 0$/],
      [{ firstSync: { pageBytes: 1 } }, /^firstSync\.pageBytes must be a whole number of at least 1 MiB/],
      [{ firstSync: {}, pokes: false }, /^firstSync needs pokes/],
      [{ schema: { current: '1' }, schemaVersion: '1' }, /^schema and schemaVersion were both given/],
      [{ changes: { webhooks: { 'a b': { url: 'https://x.example', secret: SECRET } } } }, /^changes\.webhooks: a webhook's name is 1 to 64/],
      [
        { changes: { webhooks: { mail: { url: 'ftp://x.example', secret: SECRET } } } },
        /^changes\.webhooks\.mail\.url must be an http\(s\) URL, got "ftp:\/\/x\.example"$/,
      ],
      [
        { changes: { webhooks: { mail: { url: 'https://x.example', secret: SECRET, maxBach: 1 } } } },
        /^changes\.webhooks\.mail\.maxBach is not an option of changes\.webhooks\.mail \(did you mean maxBatch\?\)/,
      ],
      [
        { storage: { ...memoryStorage(), transaction: () => {}, catchUpMs: 120_000 } },
        /^storage\.catchUpMs must be a number of milliseconds from 0 to 60,000, got 120000$/,
      ],
      [{ inspector: { secret: SECRET, readonly: true } }, /^inspector\.readonly is not an option of inspector \(did you mean readOnly\?\)/],
      [{ quotas: 3 }, /^quotas must be \{ entries\?, bytes\?, historyBytes\? \} or a function of the space, got 3$/],
    ];
    for (const [options, message] of cases) expect(() => createContext({ ...base(), ...options } as SyncOptions), JSON.stringify(options)).toThrow(message);
    expect(() => parseOptions(null)).toThrow(/^createContext: the options must be an object, got null$/);
  });

  it('no option error holds a secret, nor any part of one: a short or published secret is refused by its length or its kind only', () => {
    const short = 'Zq7kW9xPvB2mJ4tRhQ';
    const places: Array<[string, (secret: unknown) => Record<string, unknown>]> = [
      ['changes.secret', (secret) => ({ changes: { secret } })],
      ['pokes.tokenSecret', (secret) => ({ pokes: { tokenSecret: secret } })],
      ['inspector.secret', (secret) => ({ inspector: { secret } })],
      ['changes.webhooks.mail.secret', (secret) => ({ changes: { webhooks: { mail: { url: 'https://x.example', secret } } } })],
    ];
    for (const [where, options] of places) {
      const message = messageOf(() => createContext({ ...base(), ...options(short) } as SyncOptions));
      expect(message).toMatch(new RegExp(`^${where.replaceAll('.', '\\.')} must be a string of 32 characters or more .*, got one of 18 characters$`));
      for (let i = 0; i + 4 <= short.length; i++) expect(message, where).not.toContain(short.slice(i, i + 4));
      const number = 123_456_789_012;
      const wrongKind = messageOf(() => createContext({ ...base(), ...options(number) } as SyncOptions));
      expect(wrongKind).toMatch(/, got a number$/);
      expect(wrongKind).not.toContain('1234');
      expect(messageOf(() => createContext({ ...base(), ...options('a-long-random-secret-only-the-backend-knows') } as SyncOptions))).toMatch(
        new RegExp(`^${where.replaceAll('.', '\\.')} is a secret printed in viewsync's documentation`),
      );
    }
  });
});

/** The nested groups of a rule: an object schema in its pipe, the schema behind an `orElse`, a record's values. */
function groupsIn(rule: unknown): Array<Record<string, unknown>> {
  const r = rule as { type?: string; entries?: Record<string, unknown>; pipe?: unknown[]; inner?: unknown; value?: unknown } | undefined;
  if (r === undefined) return [];
  if (r.inner !== undefined) return groupsIn(r.inner);
  if (r.type === 'record') return groupsIn(r.value);
  if (r.type === 'object' && r.entries) return [r.entries];
  return (r.pipe ?? []).slice(1).flatMap((item) => groupsIn(item));
}

function messageOf(make: () => unknown): string {
  try {
    make();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('no error');
}
