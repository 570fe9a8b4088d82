import type { Mutation } from '../protocol/push-request.js';

/** What {@link SyncOptions.onError} is told about a failure. */
export interface ErrorInfo {
  /** The request being handled; absent for a call from the app's backend (`transact`, `importSpace`…). */
  request?: Request | undefined;
  /** The backend call that failed, when no request did: `'transact'`, `'importSpace'`… */
  operation?: string | undefined;
  /** The space of that backend call. */
  space?: string | undefined;
  /** The mutation whose mutator failed, when one did. */
  mutation?: Mutation;
}

/**
 * The default `onError`: one line on `console.error` per failure. Everything a client controls
 * (IDs, mutator names, the path, error messages that quote args) is escaped and shortened, so no
 * client can forge a log line; unexpected failures (a 5xx) also get their stack frames, which no
 * client controls. At most {@link BURST} lines go out at once and {@link PER_SECOND} a second
 * after that, so a flood of failing mutations costs a count, not a console; the next line out
 * says how many were left out.
 */
export function logError(error: unknown, info: ErrorInfo): void {
  const now = Date.now();
  // A clock set back (NTP, a VM resumed) refills nothing, and takes nothing away either.
  budget.tokens = Math.min(BURST, budget.tokens + (Math.max(0, now - budget.at) / 1000) * PER_SECOND);
  budget.at = now;
  if (budget.tokens < 1) {
    budget.dropped++;
    return;
  }
  budget.tokens--;
  const dropped = budget.dropped > 0 ? ` (${budget.dropped} earlier failures not logged)` : '';
  budget.dropped = 0;
  console.error(`[viewsync]${dropped} ${describeFailure(error, info)}`);
}

/** The line {@link logError} prints for a failure (less the rate limit's note). */
function describeFailure(error: unknown, info: ErrorInfo): string {
  const { mutation, request } = info;
  if (mutation !== undefined) {
    return `mutation ${mutation.id} of client ${quote(mutation.clientID)} (${quote(mutation.name)}) rejected: ${summary(error)}`;
  }
  const what =
    request === undefined
      ? `${info.operation ?? 'a backend call'} in space ${quote(info.space ?? '')}`
      : `${request.method} ${quote(new URL(request.url).pathname)}`;
  return `${what} failed: ${summary(error)}${frames(error)}`;
}

/** `Name: message`, escaped and shortened. */
function summary(error: unknown): string {
  if (!(error instanceof Error)) return escapeControls(shorten(String(error), MAX_MESSAGE));
  return `${escapeControls(error.name)}: ${escapeControls(shorten(error.message, MAX_MESSAGE))}`;
}

/** The stack frames of an unexpected error: the stack less its message, which may quote input. */
function frames(error: unknown): string {
  if (!(error instanceof Error) || error.name === 'HTTPError' || typeof error.stack !== 'string') return '';
  const head = String(error);
  return error.stack.startsWith(head) ? error.stack.slice(head.length) : '';
}

/** An ID in quotes, so that where it ends is plain: its quotes and backslashes escaped too. */
function quote(text: string): string {
  return `"${escapeControls(shorten(text, MAX_ID).replace(/["\\]/g, '\\$&'))}"`;
}

/** Control characters (newlines, ANSI escapes) and line separators as visible escapes. */
function escapeControls(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function shorten(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;
}

const MAX_ID = 100;
const MAX_MESSAGE = 500;
const BURST = 20;
const PER_SECOND = 5;

/** One budget for the process: the console is one too. */
const budget = { tokens: BURST, at: 0, dropped: 0 };
