import { sameText } from './constant-time.js';
import { refusePublishedSecret } from './published-secrets.js';
import { hmacKey } from './hmac-key.js';

/**
 * The signature on each webhook delivery, and the one function a receiver checks it with. The
 * header `viewsync-signature: t=<unix seconds>,v1=<hex>` holds an HMAC-SHA-256, under the
 * webhook's secret, of `<t>.<body>`: the time binds it to the attempt (each redelivery is signed
 * anew, with the same delivery ID), the body to what was sent. Web Crypto only: it runs in Node,
 * Deno, Bun, workerd and browsers alike.
 */

/** The header that carries the signature. */
export const SIGNATURE_HEADER = 'viewsync-signature';

/** `t=…,v1=…` for `body` sent at `seconds` (unix time) under `secret`. */
export async function signWebhook(secret: string, body: string, seconds: number): Promise<string> {
  return `t=${seconds},v1=${await hmac(secret, `${seconds}.${body}`)}`;
}

/** Options for {@link verifyWebhook}. */
export interface VerifyWebhookOptions {
  /** How far the signature's time may be from now, in milliseconds, either way: older is a replay. Default: 300,000 (5 minutes). */
  toleranceMs?: number;
  /** Now, in milliseconds since the epoch. Default: `Date.now()`. */
  now?: number;
}

/** A delivery whose signature is missing, wrong or too old: answer it 400 or 401, and do not act on it. */
export class WebhookSignatureError extends Error {
  override name = 'WebhookSignatureError';
}

/**
 * Checks a webhook delivery's signature against the webhook's `secret`, and resolves with its
 * body parsed: `{ webhook, space, delivery, from, to, changes }` (see `WebhookDelivery`).
 * Rejects with a {@link WebhookSignatureError} when the signature is missing, does not match the
 * body, or is older than `toleranceMs`, and with a TypeError when `secret` is one the docs
 * printed (anyone could sign with it). Give it the body as it came, text unchanged: a framework
 * that parsed and re-serialised the JSON breaks the signature. A delivery may come more than
 * once (at least once): keep what you did by its `delivery` ID, or by each change's `id`.
 *
 * @example
 * const body = await request.text();
 * const delivery = await verifyWebhook(body, request.headers.get('viewsync-signature'), process.env.WEBHOOK_SECRET!);
 * for (const change of delivery.changes) await index(change);
 */
export async function verifyWebhook<T = unknown>(
  body: string,
  header: string | null | undefined,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<T> {
  refusePublishedSecret("verifyWebhook's secret", secret);
  const fields = new Map((header ?? '').split(',').map((part) => part.trim().split('=', 2) as [string, string | undefined]));
  const t = fields.get('t');
  const given = fields.get('v1');
  if (t === undefined || given === undefined || !/^\d{1,12}$/.test(t))
    throw new WebhookSignatureError(`The ${SIGNATURE_HEADER} header is missing or malformed: expected t=<unix seconds>,v1=<hex>`);
  const toleranceMs = options.toleranceMs ?? 300_000;
  const skew = Math.abs((options.now ?? Date.now()) - Number(t) * 1000);
  if (skew > toleranceMs)
    throw new WebhookSignatureError(
      `The signature is ${Math.round(skew / 1000)} s from now, more than the ${Math.round(toleranceMs / 1000)} s allowed: a replay, or a clock far off`,
    );
  if (!sameText(given, await hmac(secret, `${t}.${body}`))) throw new WebhookSignatureError('The signature does not match the body under this secret');
  return JSON.parse(body) as T;
}

async function hmac(secret: string, text: string): Promise<string> {
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', await hmacKey(secret), new TextEncoder().encode(text)));
  return Array.from(mac, (byte) => byte.toString(16).padStart(2, '0')).join('');
}
