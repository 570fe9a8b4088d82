/**
 * importSpace against hostile and broken dumps: whatever the bytes, it resolves or rejects with
 * a DumpError naming a line, within bounded time and memory, and a rejected import leaves the
 * store exactly as it was.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type JSONValue, memoryStorage, type SyncContext, createContext } from '../../src/index.js';
import { read, transact } from '../../src/backend.js';
import { DumpError, importSpace } from '../../src/ops.js';
import { rawContents } from './suite.js';

const HEADER = '{"viewsync":"space","format":2}';
const end = (entries: number) => `{"viewsync":"end","entries":${entries}}`;
const RUNS = Number(process.env.FC_RUNS ?? 300);

async function seeded(): Promise<SyncContext> {
  const ctx: SyncContext = createContext({ storage: memoryStorage(), mutators: {}, limits: { keyBytes: 64, valueBytes: 4_096 }, onError: () => {} });
  await transact(ctx, '', async (tx) => {
    await tx.set('a', 1);
    await tx.set('m/x', { kept: true });
  });
  return ctx;
}

/** Imports `dump` cut into `size`-byte pieces: the error, or undefined when it was taken. */
async function attempt(ctx: SyncContext, dump: string | Uint8Array, size: number): Promise<unknown> {
  const bytes = typeof dump === 'string' ? new TextEncoder().encode(dump) : dump;
  let at = 0;
  const source = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, (at += size)));
    },
  });
  return importSpace(ctx, '', source, { mode: 'replace' }).then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('importSpace against hostile dumps', () => {
  it('random lines, random bytes and random cuts: a DumpError naming a line that exists, and an unchanged store; or an import', async () => {
    const line = fc.oneof(
      fc.constant(HEADER),
      fc.constant('{"viewsync":"space","format":2,"extra":[1,2]}'),
      fc.nat(4).map(end),
      fc.record({ key: fc.string({ maxLength: 8 }), value: fc.jsonValue({ maxDepth: 3 }) }).map((entry) => JSON.stringify(entry)),
      fc.record({ key: fc.string({ unit: 'binary', maxLength: 4 }), value: fc.jsonValue({ maxDepth: 2 }) }).map((entry) => JSON.stringify(entry)),
      fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.stringify(value)),
      fc.string({ maxLength: 20 }),
      fc.constant(''),
      fc.constant('\r'),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(line, { maxLength: 12 }),
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 1, max: 40 }),
        fc.uint8Array({ maxLength: 6 }),
        async (lines, closed, newline, size, noise) => {
          const ctx = await seeded();
          const before = await rawContents(ctx.storage);
          // Often closed by an end line that counts the lines before it, as an export's would.
          const text = [...lines, ...(closed ? [end(Math.max(0, lines.length - 1))] : [])].join(newline ? '\r\n' : '\n');
          const bytes = new Uint8Array([...new TextEncoder().encode(text), ...noise]);
          const failure = await attempt(ctx, bytes, size);
          if (failure === undefined) {
            // Taken: the dump ended with an end line counting its entries, and the space is now exactly them.
            const [, ...rest] = new TextDecoder()
              .decode(bytes)
              .split('\n')
              .map((line) => line.replace(/\r$/, ''))
              .filter((line) => line.trim() !== '');
            const entries = rest.slice(0, -1);
            expect(JSON.parse(rest.at(-1)!)).toMatchObject({ viewsync: 'end', entries: entries.length });
            const expected = entries.map((line) => JSON.parse(line) as { key: string; value: JSONValue }).map(({ key, value }) => [key, value]);
            expect(await read(ctx, '', (tx) => tx.scan().entries().toArray())).toEqual(expected);
            return;
          }
          expect(failure).toBeInstanceOf(DumpError);
          const lineCount = new TextDecoder().decode(bytes).split('\n').length;
          expect((failure as DumpError).line).toBeGreaterThanOrEqual(1);
          expect((failure as DumpError).line).toBeLessThanOrEqual(lineCount);
          expect(await rawContents(ctx.storage)).toEqual(before);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('a line with no end is refused once it outgrows any entry within the limits and any client group’s line, before it is held whole', async () => {
    const ctx = await seeded();
    const before = await rawContents(ctx.storage);
    let sent = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        // 64 KiB of one line at a time, for ever: only the bound ends it.
        sent += 65_536;
        controller.enqueue(
          new TextEncoder().encode(sent === 65_536 ? `${HEADER}\n{"key":"a","value":"${'x'.repeat(65_536 - HEADER.length - 22)}` : 'x'.repeat(65_536)),
        );
      },
    });
    const failure = await importSpace(ctx, '', endless, { mode: 'replace' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(DumpError);
    expect((failure as DumpError).line).toBe(2);
    // A group's line may be 64 KiB (dump.ts), more than an entry within these limits (4,512 characters).
    expect((failure as DumpError).message).toMatch(/longer than 65536 characters/);
    expect(sent).toBeLessThan(200_000);
    expect(await rawContents(ctx.storage)).toEqual(before);
  });

  it('values too deep, too large or not JSON-safe, keys too long, and invalid UTF-8 are refused by line', async () => {
    const ctx = await seeded();
    const before = await rawContents(ctx.storage);
    const cases: Array<[string | Uint8Array, number, RegExp]> = [
      [`${HEADER}\n{"key":"d","value":${'['.repeat(150)}${']'.repeat(150)}}`, 2, /deep/],
      [`${HEADER}\n{"key":"d","value":${'['.repeat(100_000)}`, 2, /longer than|not JSON/],
      [`${HEADER}\n{"key":"big","value":"${'y'.repeat(4_100)}"}`, 2, /larger than the limit of 4096 bytes/],
      [`${HEADER}\n{"key":"${'k'.repeat(65)}","value":1}`, 2, /longer than 64 bytes/],
      [`${HEADER}\n{"key":"a","value":1,"extra":2}`, 2, /exactly "key" and "value"/],
      [new Uint8Array([...new TextEncoder().encode(`${HEADER}\n{"key":"a","value":"`), 0xff, 0xfe, ...new TextEncoder().encode('"}\n')]), 2, /not UTF-8/],
      [`{"viewsync":"something else","format":1}\n`, 1, /not a viewsync dump's header/],
      [`\n\n   \n${HEADER.slice(0, -1)}`, 4, /not JSON/],
    ];
    for (const [dump, line, message] of cases) {
      const failure = await attempt(ctx, dump, 1_000);
      expect(failure, String(dump).slice(0, 80)).toBeInstanceOf(DumpError);
      expect([(failure as DumpError).line, (failure as DumpError).message], String(dump).slice(0, 80)).toEqual([line, expect.stringMatching(message)]);
      expect(await rawContents(ctx.storage)).toEqual(before);
    }
    // A dump cut in one-byte pieces, inside its characters, reads as whole.
    expect(await attempt(ctx, `${HEADER}\n{"key":"ü🙂","value":"ü🙂"}\n${end(1)}\n`, 1)).toBeUndefined();
    expect(await read(ctx, '', (tx) => tx.scan().entries().toArray())).toEqual([['ü🙂', 'ü🙂']]);
  });
});
