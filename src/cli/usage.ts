/** A command line the CLI cannot run: printed with a pointer to --help, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

const STORE = `Store (one of):
  --sqlite FILE          a SQLite database file
  --postgres URL         a PostgreSQL database (default: $DATABASE_URL)
  --schema NAME          PostgreSQL schema of the tables (default: the search path)
  --table-prefix PREFIX  what the table names start with (default: viewsync_)
  --connect-timeout DURATION
                         how long PostgreSQL has to answer and ready its tables
                         (default: 10s)
Or several stores, a routed storage (as the servers name them):
  --store NAME=URL       a store: a PostgreSQL URL or a SQLite file; once per store,
                         every store the servers have
  --directory NAME       the store that keeps the directory of spaces, if the
                         servers use one (default: spaces placed by hash). A store
                         holding directory rows is the servers' directory: without
                         --directory naming it, every command refuses (exit 1)
  A space whose data is not where these options find it (the servers place it
  otherwise) is refused, exit 1: nothing is read, written or moved.`;

/** The help of each command, and of the CLI as a whole (''). */
export const HELP: Record<string, string> = {
  '': `viewsync: look into and move the data of a viewsync store

Usage: viewsync <command> [options]

Commands:
  inspect [SPACE]   spaces with their entries, size, version and client groups;
                    with SPACE, its client groups and their clients
  export SPACE      write SPACE's entries and client groups to stdout as NDJSON
  import SPACE      read a dump from stdin into SPACE (replaces it; --merge only sets)
  changes SPACE     write SPACE's change feed to stdout as NDJSON (--follow: go on;
                    --all: every space's)
  feed [off]        whether the store keeps the change feed; 'feed off' turns it off
  webhook enable NAME SPACE|--all
                    enable a webhook where it was disabled (--after-gap: past a
                    gap in the change log)
  gc                remove idle client groups, old tombstones, unused view records
                    and change log rows past their retention
  move SPACE        move SPACE to another store of a routed storage, while in use
  migrate NAME      run the data migration NAME from --module FILE over every space,
                    while in use; --status: where it stands in each space
  directory check   list the spaces whose directory row does not name the store
                    holding them; 'directory repair' points those rows there
  history SPACE [KEY]
                    the changes of a key, a prefix or SPACE, and what made each;
                    --at VERSION: SPACE as it was then
  restore SPACE --to VERSION
                    make SPACE (or --prefix) what it was at VERSION, as a new version
  revert SPACE --user U|--client-group G|--mutator NAME|--mutation C:N|--versions A..B
                    undo what one cause did, as a new version; conflicts reported
  erase SPACE --key K|--prefix P|--user U
                    erase values from the live data, the history and the feed

Run 'viewsync <command> --help' for a command's options.
Durations take their unit: 500ms, 10s, 5m, 12h, 30d.
Exit codes: 0 done, 1 failed or refused (store, dump, a space not where the
options find it, a SPACE the store holds nothing of), or problems found
(directory check), 2 wrong usage (no command, an unknown one or option, a URL
that is not postgres://, a version the space's history does not keep),
3 a revert stopped on conflicts.`,
  inspect: `Usage: viewsync inspect [SPACE] [options]

Without SPACE: every space with its entries, their size, its version, its client groups and
their last activity. With SPACE: that space, and each client group with its clients'
lastMutationIDs. Counting reads every entry. A SPACE the store holds nothing of exits 1,
naming the nearest space it holds.

Options:
  --json                 print plain JSON instead of a table
  --quota-entries N      show each space's use of this quota of entries
  --quota-bytes SIZE     show each space's use of this quota of bytes (keys and
                         values, as the quotas option counts them): 500KiB, 10MiB…
  --quota-history-bytes SIZE
                         and of this bound on its history (change log and tombstones;
                         default: the --quota-bytes size)
  --web                  serve the inspector, a web page of every space, its client
                         groups, keys, history, feed and webhooks, on 127.0.0.1 until
                         Ctrl-C; it prints the address and a secret made for the run
                         (or set VIEWSYNC_INSPECTOR_SECRET, 32 characters or more)
  --port N               the port for --web (default 4848; 0: any free one)
  --read-only            with --web: no restore, revert or webhook action, and the
                         store opened read-only
${STORE}`,
  export: `Usage: viewsync export SPACE [options] > dump.ndjson

Writes SPACE's live entries to stdout: a header line, then one JSON line per entry in key
order, then its client groups with their clients' lastMutationIDs (so that an import lets
the clients go on), from one consistent snapshot, then an end line with their counts,
written only when the export is complete. An export that fails midway exits 1 and leaves no end line, so an
import refuses what it wrote (in a pipeline, use set -o pipefail to see its exit code).
Progress goes to stderr.

Options:
  --history              add SPACE's history (every row of its change log) after its
                         client groups: a dump of format 4, for 'import --history'
  --idle-timeout DURATION
                         stop, and exit 1, if stdout takes nothing for this long: the
                         snapshot holds SQLite's writes back (default: 30s)
  --quiet                no progress on stderr
${STORE}`,
  import: `Usage: viewsync import SPACE [options] < dump.ndjson

Reads a dump (from 'viewsync export' or made by hand) from stdin and makes SPACE hold
exactly its entries, and its client groups' lastMutationIDs (never lowering one SPACE has). The whole dump is checked before SPACE changes: a bad line names its
number, a dump that stops before its end line (an export that failed midway) is refused,
and nothing is imported. A dump of another space (its header's "space") is refused unless
--from names it. A SQLite file is created if missing.

Options:
  --merge                only set the dump's entries; keep the others
  --from SPACE           take a dump of SPACE (default: only of the space imported into)
  --allow-format-1       take a dump of viewsync 0.1 (format 1), which has no end line:
                         only one you know is whole, as a cut one looks whole
  --skip-clients         leave the dump's client groups out (a seed, a template):
                         their clients then start over in SPACE
  --history              take the dump's history too ('export --history'), so that
                         SPACE, which must be new, reads the same as of every kept
                         version; without it a dump's history is checked and left out
  --quiet                no progress on stderr
${STORE}`,
  move: `Usage: viewsync move SPACE --to NAME --store NAME=URL --store NAME=URL… [options]

Moves SPACE, while it is used, to the store NAME of a routed storage: copies its entries,
client groups and lastMutationIDs from one snapshot, then what changed meanwhile, then
switches it over; its clients go on without a reset. Its pushes wait during the switch only,
at most --switch-timeout; other spaces never wait. A move killed at any point leaves one copy
in use: run the same command again to finish it. Each phase is told on stderr.

A move checks first that SPACE's data is where these options find it, and refuses (exit 1,
nothing written) a SPACE no store holds, a store holding rows of it that no move left there,
or a directory the stores keep that --directory does not name: options that are not the
servers' would otherwise copy an empty space over theirs, or leave the directory naming the
store SPACE left. A space the servers place by a function of their own is moved from the app
(moveSpace), not from here.

Options:
  --to NAME              the store to move SPACE to (one of the --store names)
  --switch-timeout DURATION
                         the longest SPACE's writes may wait for the switch; a switch
                         not done by then is undone and tried again (default: 2s)
  --quiet                no progress on stderr
${STORE}`,
  directory: `Usage: viewsync directory check|repair --store NAME=URL… --directory NAME [options]

The directory of a routed storage, checked against what the stores hold. A space's row must
name the store holding its copy in use: a move made without --directory leaves it naming the
store the space left, which servers still follow (through the route record the move left) until
that store is dropped from their stores; then the space is out of reach.

check   lists every space whose row names another store than the one holding its copy in use,
        or a store not among --store, or is missing while a store holds the space, or that two
        stores could hold (found from route records and data alone). Exits 1 when it finds any.
repair  points each such row at the store holding the space's copy in use, and writes missing
        rows; leaves a space two stores could hold, or that no store among --store holds, and
        exits 1 if it left any. Name the stores the servers will have (the dropped one left out).

Options:
  --json                 print plain JSON
${STORE}`,
  changes: `Usage: viewsync changes SPACE|--all [options]

Writes SPACE's change feed to stdout, one JSON line per change in commit order: a key set
or deleted, with its value before and after and what made it, or an event a mutator
emitted. Each line's "cursor" is where to go on from (--after). The store keeps the feed
once a server whose context has \`changes\` wrote to it ('viewsync feed'). A cursor whose
changes the log no longer holds (trimmed, written with the feed off) is refused, exit 1:
start again from an export, whose header's "version" is the cursor to follow it with.
A SPACE the store holds nothing of exits 1; with --follow, it is said on stderr and followed
from its first change.

Options:
  --all                  every space's changes, space after space, each page followed by
                         a line {"viewsync":"cursor","cursor":…}: the cursor of every
                         space, to pass to --after (a space it does not name: from the
                         oldest change its log holds)
  --after CURSOR         read the changes after this cursor (default: 0, the start)
  --follow               go on writing changes as they come, until SIGINT or SIGTERM
  --poll DURATION        with --follow, how often to look for changes (default: 1s)
${STORE}`,
  feed: `Usage: viewsync feed [status|off] [options]

Whether the store keeps the change feed. It is the store's, not a server's: once a server
whose context has \`changes\` wrote to it, every write keeps the change log of each space that
has one, and of every new space, whoever writes (this CLI, a server without \`changes\`), so no
write leaves a gap in a feed that readers and webhooks follow.

status  (the default) says whether it is on, and since when; per store of a routed storage
off     turns it off: writes leave the spaces' change logs from now (what they hold stays
        readable until trimmed). First take \`changes\` out of every server's options: a
        server with it goes on keeping the logs of the spaces it writes, and turns the
        store's feed on again once started again.

Options:
  --json                 print plain JSON
${STORE}`,
  webhook: `Usage: viewsync webhook enable NAME SPACE|--all [options]

Enables the webhook NAME (as the servers' changes.webhooks name it) where it was disabled:
in SPACE, or with --all in every space. Its batch in flight is sent again at once, by the
servers that run startWebhooks. A webhook disabled because the change log no longer holds
the changes after its cursor (trimmed past retention, or written by an older viewsync
without the log) is refused, exit 1, unless --after-gap.

Options:
  --all                  every space where NAME was disabled
  --after-gap            go on after a gap in the log, from where it is whole: the changes
                         in the gap are never delivered, and the next delivery tells the
                         receiver ("gap": {"from", "to"})
${STORE}`,
  migrate: `Usage: viewsync migrate NAME --module FILE [options]
       viewsync migrate NAME --status [options]

Runs the data migration NAME over every space of the store, while servers use it: in batches
of entries, each a transaction queued with the space's pushes and committed with the space's
progress, so a run killed or stopped (Ctrl-C) anywhere goes on, when run again, after the last
batch it committed, and no entry is migrated twice. A space done under NAME is never run again.
FILE is a JavaScript module (.js, .mjs; a .ts one where the Node running the CLI strips types)
exporting \`migrations\`, an array made with defineMigration, or one as its default; it
imports viewsync from the app's own node_modules. Progress goes to stderr: a bar on a
terminal, a line a second otherwise.

Options:
  --module FILE          the module exporting the migration (resolved against the cwd)
  --space SPACE          only this space (default: every space, and those made meanwhile)
  --batch N              entries per transaction (default: 50)
  --status               say where NAME stands in each space (done, started: how many
                         entries, up to which key; not started), reading only
  --json                 with --status, print plain JSON
  --quiet                no progress on stderr
${STORE}`,
  history: `Usage: viewsync history SPACE [KEY] [options]
       viewsync history SPACE --at VERSION [options]

Every change of KEY, of the keys under --prefix, or of every key of SPACE, oldest first, from
the change log SPACE keeps as its history (a server's \`changes\` option, kept for
retention.historyMs): each change's version, time, op (set or del), key, value before and
after (compact; (erased) where an erasure took it), and what made it: a client's mutation
(its client#mutationID, user, client group and mutator), a backend call, a migration, a
restore, a revert or an erasure. With --at, SPACE's entries as they were at VERSION. Reads
only. A version the history does not keep exits 2.

Options:
  --prefix P             only the keys that start with P
  --after VERSION        only the changes after VERSION (with --at: the entries after
                         the key given, to read on from where --limit stopped)
  --limit N              at most N changes, whole versions at a time, up to 10000 (with
                         --at: N entries); where more follow, stderr says the --after
                         to go on with (default: every one)
  --at VERSION           SPACE as of VERSION: its entries then, in key order
  --json                 print plain JSON: the page of readHistory, or of at
${STORE}`,
  restore: `Usage: viewsync restore SPACE --to VERSION [options]

Makes SPACE, or its keys under --prefix, what it was at VERSION, in one commit: a new version
that clients pull as an ordinary patch (no client starts over), and that the change feed
carries as changes made by a restore. Keys absent then are deleted; keys whose value is the
same are left. Prints how many keys it changed (set, deleted), the first 20 with their value
now and the one they get, and the version it made. A version SPACE's history does not keep
exits 2 and changes nothing.

Options:
  --to VERSION           the version to go back to
  --prefix P             only the keys that start with P; the rest stay as they are
  --dry-run              only say what it would change: nothing is written (it only
                         reads, so it runs beside a server holding a SQLite file)
  --json                 print plain JSON, with every change
${STORE}`,
  revert: `Usage: viewsync revert SPACE CAUSE... [options]

Undoes exactly what one cause did in SPACE, in one commit (a new version, which clients pull
as an ordinary patch): each key the cause changed goes back to its value before the cause's
first change to it. The cause is every flag given (all must match), at least one of:
  --client-group G       the mutations of client group G
  --user U               the changes made for user U (mutations and backend calls)
  --mutator NAME         the mutations of mutator NAME
  --mutation C:N         one mutation: client ID C, mutation ID N
  --versions A..B        the changes of versions A to B, both included
narrowed by:
  --since DURATION       only the changes committed in the last DURATION (5m, 1h, 2d)
A key that a change of another cause wrote later is a conflict: every one is printed, with
the later changes and who made them, and treated by --on-conflict. Exit 3 when the revert
stopped on conflicts (nothing changed), 0 otherwise.

Options:
  --on-conflict skip|overwrite|stop
                         skip: leave those keys, revert the rest; overwrite: write
                         them back all the same; stop: revert nothing (default)
  --dry-run              only say what it would change and every conflict: nothing is
                         written (with stop and conflicts: exit 3 too); it only reads,
                         so it runs beside a server holding a SQLite file
  --json                 print plain JSON, with every change and conflict
${STORE}`,
  erase: `Usage: viewsync erase SPACE (--key K | --prefix P | --user U) [options]

Erases values for good: deletes the live keys, in one commit, and removes their values from
SPACE's history (each change keeps its place, its key and what made it) and checkpoints; the
change feed then carries a viewsync.erased event naming the target, so that webhook receivers
erase their copies. --user erases what the kept history says U wrote, and the args of U's
rejected mutations. It cannot reach receivers' copies not yet erased, backups of the store, or
writes older than the kept history. There is no undo and no dry run: 'viewsync history' shows
what a key or prefix holds first.

Options:
  --key K                one key
  --prefix P             every key that starts with P (not '')
  --user U               what user U wrote
  --json                 print plain JSON, with every key deleted
${STORE}`,
  gc: `Usage: viewsync gc [options]

Removes what the retention lets go, as collectGarbage() does: client groups idle longer than
--client-groups (with their clients), tombstones older than --tombstones, and view records no
pull named for --client-groups, and change log rows older than both --changes and
--keep-history (the log is the spaces' history too: give a server's retention.historyMs here,
or gc trims history a server keeps longer).

Options:
  --space SPACE          only this space (default: every space)
  --client-groups DURATION
                         retention of idle client groups, or 'forever' (default: 30d)
  --tombstones DURATION  retention of tombstones, or 'forever' (default: 30d)
  --changes DURATION     retention of the change log, or 'forever' (default: 30d)
  --keep-history DURATION
                         retention of history (retention.historyMs), or 'forever' (default: --changes)
  --json                 print plain JSON
${STORE}`,
};
