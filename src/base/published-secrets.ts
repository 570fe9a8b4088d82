/**
 * Secrets that viewsync's own documentation, examples or starter print, or once printed: anyone
 * who read them has them, so an option or a receiver given one would open the change feed, poke
 * streams or webhooks to anyone. test/house/published-secrets.test.ts fails when the shipped text
 * holds a secret-looking literal that is not here; keep one that was removed, since old copies of
 * the docs still hold it.
 */

/** Every secret the docs have printed. */
export const PUBLISHED_SECRETS: readonly string[] = ['a-long-random-secret-only-the-backend-knows', 'another-long-random-secret-for-the-mailer'];

/** Throws a TypeError naming `option` when `value` is one of {@link PUBLISHED_SECRETS}. */
export function refusePublishedSecret(option: string, value: unknown): void {
  if (typeof value !== 'string' || !PUBLISHED_SECRETS.includes(value.trim())) return;
  throw new TypeError(
    `${option} is a secret printed in viewsync's documentation, so anyone may have it: generate one of your own (openssl rand -base64 32) and give it to the server from its environment, never in the code`,
  );
}
