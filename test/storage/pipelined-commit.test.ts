/**
 * The postgres.js driver sends COMMIT with a transaction's one closing write when the store says
 * it may (`TransactionEnd.pipelined`): the space's lock is then held one round trip less. A fake
 * postgres.js client notes what goes on the wire, in order, and answers each statement when the
 * test says.
 */
import { describe, expect, it } from 'vitest';
import type { PostgresJsClient } from '../../src/storage/postgres-js.js';
import { postgresJsDriver } from '../../src/storage/postgres-js.js';

/** A postgres.js client that notes BEGIN, each statement sent and COMMIT, and holds each statement's answer. */
function wire() {
  const sent: string[] = [];
  const answers = new Map<string, { resolve: (rows: unknown[]) => void; reject: (error: unknown) => void }>();
  const client: PostgresJsClient = {
    // As postgres.js: BEGIN, the body, then COMMIT once the body has resolved (ROLLBACK if it failed).
    begin: async (_mode, fn) => {
      sent.push('BEGIN');
      try {
        const result = await fn({
          unsafe: (text: string) => {
            sent.push(text);
            return new Promise((resolve, reject) => answers.set(text, { resolve, reject }));
          },
        });
        sent.push('COMMIT');
        return result;
      } catch (error) {
        sent.push('ROLLBACK');
        throw error;
      }
    },
  };
  return { client, sent, answer: (text: string) => answers.get(text)!.resolve([]), fail: (text: string, error: unknown) => answers.get(text)!.reject(error) };
}

const driverOn = (client: PostgresJsClient) => postgresJsDriver(client, { prepare: true, lostAfterMs: 30_000 });
const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('postgres.js: COMMIT with the closing write', () => {
  it('a pipelined end sends COMMIT before the write is answered; the transaction resolves once both are', async () => {
    const { client, sent, answer } = wire();
    const done = driverOn(client).transaction('ISOLATION LEVEL READ COMMITTED', async () => ({ result: 'kept', finish: [['WRITE', []]], pipelined: true }));
    await settled();
    expect(sent).toEqual(['BEGIN', 'WRITE', 'COMMIT']);
    answer('WRITE');
    expect(await done).toBe('kept');
  });

  it('without it (a read-only server, or more than one closing statement), COMMIT waits for the writes', async () => {
    for (const end of [
      { finish: [['WRITE', []]] as const, pipelined: false },
      {
        finish: [
          ['PUT', []],
          ['DELETE', []],
        ] as const,
        pipelined: true,
      },
    ]) {
      const { client, sent, answer } = wire();
      const done = driverOn(client).transaction('ISOLATION LEVEL READ COMMITTED', async () => ({ result: 'kept', ...end }));
      await settled();
      const writes = end.finish.map(([text]) => text);
      expect(sent).toEqual(['BEGIN', ...writes]);
      writes.forEach(answer);
      expect(await done).toBe('kept');
      expect(sent).toEqual(['BEGIN', ...writes, 'COMMIT']);
    }
  });

  it('a pipelined write that fails (its COMMIT then rolls back at the server) rejects the transaction with its error', async () => {
    const { client, sent, fail } = wire();
    const done = driverOn(client).transaction('ISOLATION LEVEL READ COMMITTED', async () => ({ result: 'kept', finish: [['WRITE', []]], pipelined: true }));
    done.catch(() => {});
    await settled();
    expect(sent).toEqual(['BEGIN', 'WRITE', 'COMMIT']);
    fail('WRITE', Object.assign(new Error('index row size 3016 exceeds btree version 4 maximum 2704'), { code: '54000' }));
    await expect(done).rejects.toMatchObject({ code: '54000' });
  });
});
