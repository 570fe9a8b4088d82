/**
 * Secrets the shipped text prints are anyone's: the docs, README, changelog, examples and starter
 * hand no secret a literal (no `?? 'a-secret'` fallback either), every secret-looking literal they
 * hold is on the published list, and `createContext` and `verifyWebhook` refuse what is on it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PUBLISHED_SECRETS } from '../../src/base/published-secrets.js';
import { createContext, memoryStorage } from '../../src/index.js';
import { verifyWebhook } from '../../src/backend.js';
import { ROOT } from '../package/packed.js';
import { testMutators } from '../support/helpers.js';

const SHIPPED = ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', ...textFiles('docs'), ...textFiles('examples'), ...textFiles('create-viewsync')];

describe('secrets the shipped text prints', () => {
  it('finds each way a literal is handed to a secret, and not an env read that stops without one', () => {
    const lines = [
      "secret: process.env.CHANGES_SECRET ?? 'a-long-random-secret-only-the-backend-knows',",
      "const delivery = await verifyWebhook<WebhookDelivery>(body, request.headers.get('viewsync-signature'), 'a-literal-handed-to-verify');",
      "const secret = 'a-literal-in-a-variable';",
      'pokes: { tokenSecret: "a-literal-token-secret" },',
      'MAILER_SECRET=from-a-shell-line npm start',
      "const secret = process.env.CHANGES_SECRET || exit('CHANGES_SECRET is not set: generate one with openssl rand -base64 32');",
    ];
    expect(lines.map((line) => secretLiterals(line).handed)).toEqual([
      ['a-long-random-secret-only-the-backend-knows'],
      ['a-literal-handed-to-verify'],
      ['a-literal-in-a-variable'],
      ['a-literal-token-secret'],
      ['from-a-shell-line'],
      [],
    ]);
    expect(secretLiterals("A test may name 'some-long-secret-of-the-docs' in prose").named).toEqual(['some-long-secret-of-the-docs']);
  });

  it('hands no secret option, receiver or environment variable a literal, not even as a fallback', () => {
    expect(SHIPPED.length).toBeGreaterThan(30);
    const handed = SHIPPED.flatMap((file) => secretLiterals(read(file)).handed.map((literal) => `${file}: ${literal}`));
    // Read a secret from the environment, and stop at startup without it.
    expect(handed).toEqual([]);
  });

  it('holds no secret-looking literal that createContext would take: each is on the published list', () => {
    const unlisted = SHIPPED.flatMap((file) => {
      const { handed, named } = secretLiterals(read(file));
      return [...handed, ...named].filter((literal) => !PUBLISHED_SECRETS.includes(literal)).map((literal) => `${file}: ${literal}`);
    });
    // Add it to src/base/published-secrets.ts, so that whoever copies it is refused.
    expect(unlisted).toEqual([]);
  });

  it.each(PUBLISHED_SECRETS)('createContext refuses %s in every secret option, saying which and what to do', (secret) => {
    const make = (options: object) => () => createContext({ storage: memoryStorage(), mutators: testMutators, ...options });
    const what = /is a secret printed in viewsync's documentation, so anyone may have it: generate one of your own \(openssl rand -base64 32\)/;
    expect(make({ changes: { secret } })).toThrow(new RegExp(`^changes\\.secret ${what.source}`));
    expect(make({ changes: { webhooks: { mailer: { url: 'https://mail.example/hooks', secret } } } })).toThrow(
      new RegExp(`^changes\\.webhooks\\.mailer\\.secret ${what.source}`),
    );
    expect(make({ pokes: { tokenSecret: `${secret}\n` } })).toThrow(new RegExp(`^pokes\\.tokenSecret ${what.source}`));
    expect(make({ changes: { secret: `${secret}, but mine` }, pokes: { tokenSecret: `mine: ${secret}` } })).not.toThrow();
  });

  it('verifyWebhook refuses them too: whoever read the docs could sign a delivery', async () => {
    for (const secret of PUBLISHED_SECRETS)
      await expect(verifyWebhook('{}', 't=1,v1=00', secret)).rejects.toThrow(/^verifyWebhook's secret is a secret printed in viewsync's documentation/);
  });
});

/**
 * The string literals of `text` handed to a secret (a name holding "secret" or "password" set to
 * one, or falling back to one with `??` or `||`; verifyWebhook's literal argument; a shell's
 * `NAME_SECRET=value`), and those that merely look like one ("secret" in them, but no spaces and
 * not a name such as `pokes.tokenSecret`).
 */
function secretLiterals(text: string): { handed: string[]; named: string[] } {
  const quoted = `(['"\`])([^'"\`\\n$]+)`;
  const handed = [
    ...[...text.matchAll(new RegExp(`\\b\\w*(?:secret|password)\\w*\\s*[:=]\\s*(?:[\\w.$[\\]'"!]+\\s*(?:\\?\\?|\\|\\|)\\s*)?${quoted}\\1`, 'gi'))].map(
      (match) => match[2]!,
    ),
    ...[...text.matchAll(new RegExp(`verifyWebhook[^;\\n]*?,\\s*${quoted}\\1\\s*[,)]`, 'g'))].map((match) => match[2]!),
    ...[...text.matchAll(/\b[A-Z][A-Z0-9_]*(?:SECRET|PASSWORD|TOKEN)[A-Z0-9_]*=(?!\$)(['"]?)([^\s'"]+)\1/g)].map((match) => match[2]!),
  ];
  const named = [...text.matchAll(new RegExp(`${quoted}\\1`, 'g'))]
    .map((match) => match[2]!)
    .filter((literal) => /secret/i.test(literal) && !/\s/.test(literal) && literal.length >= 16 && !/^[A-Za-z_$][\w$]*(\.[\w$]+)*$/.test(literal));
  return { handed, named };
}

/** A file's text; a page's inline code spans lose their backticks, which quote nothing in prose. */
function read(file: string): string {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return file.endsWith('.md') ? text.replace(/```[\s\S]*?```|`/g, (match) => (match === '`' ? ' ' : match)) : text;
}

/** The text files under `folder` of the repository, by path from its root (no node_modules). */
function textFiles(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((path) => !path.split('/').includes('node_modules') && /\.(md|ts|tsx|js|json|toml|html)$/.test(path))
    .map((path) => join(folder, path));
}
