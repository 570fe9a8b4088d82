import type { ConflictPolicy, EraseTarget } from '../backend/history.js';
import type { RevertCause } from '../sync/version/records.js';
import { duration } from './duration.js';
import { UsageError } from './usage.js';

/**
 * The command lines of `history`, `restore`, `revert` and `erase`, read into what the history
 * API takes. Every mistake is a {@link UsageError} (exit 2), said before the store is opened, so
 * a wrong command line changes nothing.
 */

/** The flags these commands read, as the CLI parsed them. */
export interface HistoryFlags {
  json?: boolean;
  prefix?: string;
  after?: string;
  limit?: string;
  at?: string;
  to?: string;
  'dry-run'?: boolean;
  'on-conflict'?: string;
  'client-group'?: string;
  user?: string;
  mutator?: string;
  mutation?: string;
  versions?: string;
  since?: string;
  key?: string;
}

/** `viewsync history SPACE [KEY] …`: the space as of `at`, or the changes of a key, a prefix or the space. */
export type HistoryArgs =
  | { space: string; at: number; prefix?: string; after?: string; limit?: number; json: boolean }
  | { space: string; at?: undefined; key?: string; prefix?: string; after?: number; limit?: number; json: boolean };

export function historyArgs(rest: readonly string[], flags: HistoryFlags): HistoryArgs {
  const [space, key, ...extra] = rest;
  if (space === undefined) throw new UsageError(`history needs a SPACE (quote the default space as '')`);
  if (extra.length > 0) throw new UsageError(`history takes a SPACE and at most one KEY, got ${rest.length} arguments`);
  const json = flags.json === true;
  const prefix = flags.prefix === undefined ? {} : { prefix: flags.prefix };
  if (flags.at !== undefined) {
    if (key !== undefined) throw new UsageError('history --at reads the whole space as of a version: it takes --prefix, not a KEY');
    const limit = flags.limit === undefined ? {} : { limit: whole(flags.limit, '--limit', 1, Number.MAX_SAFE_INTEGER) };
    return { space, at: version(flags.at, '--at'), ...prefix, ...(flags.after !== undefined && { after: flags.after }), ...limit, json };
  }
  if (key !== undefined && flags.prefix !== undefined) throw new UsageError('history takes a KEY or --prefix, not both');
  const limit = flags.limit === undefined ? {} : { limit: whole(flags.limit, '--limit', 1, 10_000) };
  return { space, ...(key !== undefined && { key }), ...prefix, ...(flags.after !== undefined && { after: version(flags.after, '--after') }), ...limit, json };
}

/** `viewsync restore SPACE --to VERSION …`. */
export interface RestoreArgs {
  space: string;
  to: number;
  prefix: string;
  dryRun: boolean;
  json: boolean;
}

export function restoreArgs(rest: readonly string[], flags: HistoryFlags): RestoreArgs {
  const space = oneSpace('restore', rest);
  if (flags.to === undefined) throw new UsageError('restore needs --to VERSION, the version to make the space (or --prefix) what it was at');
  return { space, to: version(flags.to, '--to'), prefix: flags.prefix ?? '', dryRun: flags['dry-run'] === true, json: flags.json === true };
}

/** `viewsync revert SPACE <cause> …`. */
export interface RevertArgs {
  space: string;
  cause: RevertCause;
  onConflict: ConflictPolicy;
  dryRun: boolean;
  json: boolean;
}

export function revertArgs(rest: readonly string[], flags: HistoryFlags, now: number): RevertArgs {
  const space = oneSpace('revert', rest);
  const cause: RevertCause = {
    ...(flags['client-group'] !== undefined && { clientGroupID: flags['client-group'] }),
    ...(flags.user !== undefined && { userID: flags.user }),
    ...(flags.mutator !== undefined && { mutator: flags.mutator }),
    ...(flags.mutation !== undefined && { mutation: mutation(flags.mutation) }),
    ...(flags.versions !== undefined && { versions: versions(flags.versions) }),
  };
  if (Object.keys(cause).length === 0) {
    throw new UsageError(
      'revert needs a cause: --client-group G, --user U, --mutator NAME, --mutation CLIENTID:MUTATIONID or --versions A..B (--since only narrows one; to undo everything since a version, restore to it)',
    );
  }
  // The changes committed in the last DURATION, by this machine's clock.
  if (flags.since !== undefined) cause.since = now - duration(flags.since, '--since', 0);
  const onConflict = flags['on-conflict'] ?? 'stop';
  if (!POLICIES.includes(onConflict as ConflictPolicy)) throw new UsageError(`--on-conflict takes skip, overwrite or stop, got ${JSON.stringify(onConflict)}`);
  return { space, cause, onConflict: onConflict as ConflictPolicy, dryRun: flags['dry-run'] === true, json: flags.json === true };
}

/** `viewsync erase SPACE (--key K | --prefix P | --user U)`. */
export interface EraseArgs {
  space: string;
  target: EraseTarget;
  json: boolean;
}

export function eraseArgs(rest: readonly string[], flags: HistoryFlags): EraseArgs {
  const space = oneSpace('erase', rest);
  const given = (['key', 'prefix', 'user'] as const).filter((flag) => flags[flag] !== undefined);
  if (given.length === 0) throw new UsageError('erase needs what to erase: --key K, --prefix P or --user U');
  if (given.length > 1) throw new UsageError(`erase takes one of --key, --prefix or --user, got ${given.map((flag) => `--${flag}`).join(' and ')}`);
  if (flags.prefix === '') throw new UsageError("erase --prefix '' would erase the whole space: name a prefix (a space is deleted, not erased)");
  const target: EraseTarget = flags.key !== undefined ? { key: flags.key } : flags.prefix !== undefined ? { prefix: flags.prefix } : { userID: flags.user! };
  return { space, target, json: flags.json === true };
}

const POLICIES: readonly ConflictPolicy[] = ['skip', 'overwrite', 'stop'];

function oneSpace(command: string, rest: readonly string[]): string {
  if (rest.length === 0) throw new UsageError(`${command} needs a SPACE (quote the default space as '')`);
  if (rest.length > 1) throw new UsageError(`${command} takes one SPACE, got ${rest.length} arguments`);
  return rest[0]!;
}

/** A version: a whole number of at least 0. */
function version(text: string, flag: string): number {
  return whole(text, flag, 0, Number.MAX_SAFE_INTEGER, 'a version, a whole number of at least 0');
}

function whole(text: string, flag: string, min: number, max: number, what = `a whole number from ${min} to ${max.toLocaleString('en-US')}`): number {
  const value = /^\d{1,16}$/.test(text) ? Number(text) : NaN;
  if (!(value >= min && value <= max)) throw new UsageError(`${flag} takes ${what}, got ${JSON.stringify(text)}`);
  return value;
}

/** `A..B`, both versions included, A at most B. */
function versions(text: string): [number, number] {
  const match = /^(\d+)\.\.(\d+)$/.exec(text);
  if (match === null) throw new UsageError(`--versions takes a range of versions A..B (both included), such as 120..180, got ${JSON.stringify(text)}`);
  const [from, to] = [version(match[1]!, '--versions'), version(match[2]!, '--versions')];
  if (from > to) throw new UsageError(`--versions ${text} runs backwards: give the lower version first (${to}..${from})`);
  return [from, to];
}

/** `CLIENTID:MUTATIONID`; a client ID may hold a colon, so the last one splits. */
function mutation(text: string): { clientID: string; mutationID: number } {
  const colon = text.lastIndexOf(':');
  const [clientID, id] = [text.slice(0, colon), text.slice(colon + 1)];
  if (colon <= 0 || !/^\d{1,16}$/.test(id) || !Number.isSafeInteger(Number(id)))
    throw new UsageError(`--mutation takes CLIENTID:MUTATIONID, such as 5f2c…:42, got ${JSON.stringify(text)}`);
  return { clientID, mutationID: Number(id) };
}
