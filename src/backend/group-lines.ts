import { compareUTF8, fitsUTF8, hasLoneSurrogate } from '../base/utf8.js';
import { type DumpedGroup, type GroupLine, groupOrder } from '../sync/dumps/dumped-groups.js';
import type { Limits } from '../sync/transactions/limits.js';
import { isCount } from './dump.js';
import { DumpError } from './lines.js';

/** The client groups of a dump, read a line at a time: checks each line, and that they come in order; counts the groups. */
export class GroupSection {
  /** Client groups read so far. */
  groups = 0;
  readonly #limits: Limits;
  /** The previous line's group, and its last client ID. */
  #previous: { order: string; expired: boolean; last: string | undefined; index: number } | undefined;

  constructor(limits: Limits) {
    this.#limits = limits;
  }

  /** Checks line `line`; returns its group and its place among the group's lines. */
  read(parsed: unknown, line: number): GroupLine {
    const group = checkGroup(parsed, line, this.#limits);
    const order = groupOrder(group.user, group.group);
    const ids = 'clients' in group ? Object.keys(group.clients).sort(compareUTF8) : [];
    const previous = this.#previous;
    const same = previous?.order === order;
    if (previous !== undefined && !same && compareUTF8(previous.order, order) > 0) {
      throw new DumpError(
        line,
        `has ${describe(group)}, which is not after the previous line's: a dump lists each client group once, in the order an export writes them (the store's, see the dump format)`,
      );
    }
    // A group of many clients may go on over the next lines, each line's clients after the last one's.
    if (same && (previous.expired || 'expired' in group || ids.length === 0 || previous.last === undefined || compareUTF8(previous.last, ids[0]!) >= 0)) {
      throw new DumpError(
        line,
        `has ${describe(group)} again: a group comes once, or, with many clients, on consecutive lines, each line's clients after the previous line's (client IDs in UTF-8 byte order)`,
      );
    }
    if (!same) this.groups++;
    const index = same ? previous.index + 1 : 0;
    this.#previous = { order, expired: 'expired' in group, last: ids.at(-1), index };
    return { group, index };
  }
}

function checkGroup(parsed: unknown, line: number, limits: Limits): DumpedGroup {
  const group = parsed as Record<string, unknown>;
  const fields = Object.keys(group);
  if (fields.length !== 3 || !('user' in group) || !('clients' in group || 'expired' in group)) {
    throw new DumpError(line, 'is not a client group: it should be an object with exactly "group", "user" and "clients" (or "expired": true)');
  }
  checkID(group.group, 'a group ID', line, limits);
  if (group.user !== null) checkID(group.user, 'a user ID', line, limits);
  if ('expired' in group) {
    if (group.expired !== true) throw new DumpError(line, `has "expired": ${JSON.stringify(group.expired)}: an expired group's line has "expired": true`);
    return group as DumpedGroup;
  }
  const clients = group.clients;
  if (typeof clients !== 'object' || clients === null || Array.isArray(clients))
    throw new DumpError(line, 'has "clients" that is not an object of client IDs and their lastMutationIDs');
  for (const [id, lmid] of Object.entries(clients)) {
    checkID(id, 'a client ID', line, limits);
    if (!isCount(lmid))
      throw new DumpError(line, `has client ${JSON.stringify(id)} with lastMutationID ${JSON.stringify(lmid)}: it should be a whole number from 0 to 2^53 - 1`);
  }
  return group as DumpedGroup;
}

function checkID(id: unknown, what: string, line: number, limits: Limits): asserts id is string {
  if (typeof id !== 'string') throw new DumpError(line, `has ${what} that is not a string (${JSON.stringify(id) ?? typeof id})`);
  if (hasLoneSurrogate(id)) throw new DumpError(line, `has ${what} holding a lone surrogate (no UTF-8 form)`);
  if (!fitsUTF8(id, limits.idBytes)) throw new DumpError(line, `has ${what} longer than ${limits.idBytes} bytes (limits.idBytes)`);
}

function describe({ user, group }: DumpedGroup): string {
  return `client group ${JSON.stringify(group)} ${user === null ? 'of anonymous requests' : `of user ${JSON.stringify(user)}`}`;
}
