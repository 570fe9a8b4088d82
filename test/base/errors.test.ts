/**
 * An HTTPError's `error` field names its status: a client or a log reading `ClientError` for a
 * 410 cannot tell a feed that is gone from a bad request.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HTTPError } from '../../src/base/errors.js';
import { ROOT } from '../package/packed.js';

describe('HTTPError.code', () => {
  it('names every status src answers with', () => {
    const files = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.ts'));
    const statuses = new Set<number>();
    for (const name of files)
      for (const [, status] of readFileSync(join(ROOT, 'src', name), 'utf8').matchAll(/new HTTPError\((\d{3})\b/g)) statuses.add(Number(status));
    expect(statuses.has(410)).toBe(true);
    const unnamed = [...statuses].filter((status) => ['ClientError', 'ServerError'].includes(new HTTPError(status, '').code));
    expect(unnamed).toEqual([]);
  });

  it('says Gone for a 410, and still a kind for a status it has no name for', () => {
    expect(new HTTPError(410, 'gone').toReply()).toMatchObject({ status: 410 });
    expect(new HTTPError(410, 'gone').code).toBe('Gone');
    expect(new HTTPError(418, '').code).toBe('ClientError');
    expect(new HTTPError(502, '').code).toBe('ServerError');
  });
});
