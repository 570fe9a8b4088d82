import type { SpaceSummary } from '../backend/inspect.js';
import type { KeptRejection } from '../sync/schema/rejected.js';
import { date, print, printable } from './output.js';

/** A space's active client groups by schema version, `1:3 2:40`; `-` when none was recorded. */
export function schemaCell(summary: SpaceSummary): string {
  const versions = Object.entries(summary.schemaVersions ?? {});
  return versions.length === 0 ? '-' : versions.map(([version, groups]) => `${JSON.stringify(version)}:${groups}`).join(' ');
}

/** How many rejected mutations `inspect SPACE` prints; `--json` has every one kept. */
const SHOWN = 20;

/** The space's kept rejected mutations, the latest {@link SHOWN}: an old client's work that did not land is seen. */
export function printRejected(rejected: readonly KeptRejection[], table: (rows: string[][], head: string[]) => string): void {
  if (rejected.length === 0) return;
  const shown = rejected.slice(-SHOWN);
  print('');
  print(
    `Mutations of older schema versions that could not be applied: ${rejected.length}${rejected.length > shown.length ? ` (the latest ${shown.length}; --json for all)` : ''}`,
  );
  print(
    table(
      shown.map((one) => [
        date(one.at),
        printable(one.schemaVersion),
        printable(one.clientGroupID),
        `${printable(one.clientID)}#${one.id}`,
        printable(one.name),
        printable(one.argsCut ?? JSON.stringify(one.args ?? null)),
        printable(one.reason),
      ]),
      ['AT', 'SCHEMA', 'CLIENT GROUP', 'MUTATION', 'NAME', 'ARGS', 'REASON'],
    ),
  );
}
