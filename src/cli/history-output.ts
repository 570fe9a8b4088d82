import type { JSONValue } from '../protocol/json.js';
import type { PlannedChange } from '../backend/history.js';
import type { ChangeOrigin, RevertCause } from '../sync/version/records.js';
import { date, print, printable, table } from './output.js';

/**
 * How the history commands print what they read and do: values compact and escaped (a value is
 * a client's text, which must not move a terminal's cursor), and what made a change in a line.
 */

/** A value as a short line of JSON; `(none)`: absent. */
export function shown(value: JSONValue | undefined): string {
  return value === undefined ? '(none)' : printable(JSON.stringify(value));
}

/** Who made a change, in the columns BY, USER, CLIENT GROUP, MUTATOR; `-` where it has none. */
export function originCells(by: ChangeOrigin): [string, string, string, string] {
  const user = 'userID' in by && by.userID !== null ? printable(by.userID) : '-';
  switch (by.kind) {
    case 'mutation':
      return [`mutation ${printable(by.clientID)}#${by.mutationID}`, user, printable(by.clientGroupID), printable(by.name)];
    case 'backend':
      return [`backend ${by.call}`, user, '-', by.name === undefined ? '-' : printable(by.name)];
    case 'migration':
      return ['migration', '-', '-', printable(by.name)];
    case 'restore':
      return [`restore to ${by.to}${by.prefix === '' ? '' : ` under ${printable(JSON.stringify(by.prefix))}`}`, '-', '-', '-'];
    case 'revert':
      return [`revert of ${causeText(by.cause)}`, '-', '-', '-'];
    case 'erase':
      return ['erase', '-', '-', '-'];
  }
}

/** Who made a change, in one line: `mutation c1#3 (addTodo) by "bob", group g2`. */
export function originLine(by: ChangeOrigin): string {
  const [kind, user, group, mutator] = originCells(by);
  return [kind, mutator === '-' ? '' : `(${mutator})`, user === '-' ? '' : `by ${user}`, group === '-' ? '' : `group ${group}`]
    .filter((part) => part !== '')
    .join(' ');
}

/** A revert's cause, as the flags that name it would: `user mallory, versions 3..5`. */
export function causeText(cause: RevertCause): string {
  const parts: string[] = [];
  if (cause.clientGroupID !== undefined) parts.push(`client group ${printable(cause.clientGroupID)}`);
  if (cause.userID !== undefined) parts.push(`user ${printable(cause.userID)}`);
  if (cause.mutator !== undefined) parts.push(`mutator ${printable(cause.mutator)}`);
  if (cause.mutation !== undefined) parts.push(`mutation ${printable(cause.mutation.clientID)}:${cause.mutation.mutationID}`);
  if (cause.versions !== undefined) parts.push(`versions ${cause.versions[0]}..${cause.versions[1]}`);
  if (cause.since !== undefined) parts.push(`since ${date(cause.since)}`);
  return parts.join(', ');
}

/** How many planned changes are listed; `--json` has every one. */
const LISTED = 20;

/** What a restore or revert changes: how many set and deleted, and the first {@link LISTED}, each key's value now and the one it gets. */
export function printPlanned(changes: readonly PlannedChange[]): void {
  if (changes.length === 0) return;
  const listed = changes.slice(0, LISTED);
  print('');
  print(
    table(
      listed.map(({ key, before, after }) => [printable(key), shown(before), after === undefined ? '(deleted)' : shown(after)]),
      ['KEY', 'NOW', 'BECOMES'],
    ),
  );
  if (changes.length > listed.length) print(`… and ${(changes.length - listed.length).toLocaleString('en-US')} more (--json lists every one)`);
}

/** `2 keys (1 set, 1 deleted)`. */
export function plannedCount(changes: readonly PlannedChange[]): string {
  const deleted = changes.filter(({ after }) => after === undefined).length;
  return `${keys(changes.length)} (${(changes.length - deleted).toLocaleString('en-US')} set, ${deleted.toLocaleString('en-US')} deleted)`;
}

/** `1 key`, `3 keys`. */
export function keys(n: number): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? 'key' : 'keys'}`;
}
