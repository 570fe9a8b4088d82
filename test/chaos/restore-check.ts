/**
 * Restores and reverts among a chaos run's faults. Two editors (users `alice` and `bob`) write
 * the keys `doc/0` … `doc/5` of the clients' spaces from the backend door (`mutate`, each value
 * `{user, n}`, written once), while an operator restores `doc/` (or one key of it) to a version
 * some seconds back, or reverts one editor's changes (all of them, or those of a window of
 * versions) with a conflict policy drawn from all three: from a server (killed by the faults), or
 * from an operator's process of its own (killed -9 at a random moment, half of the time as it
 * calls; on SQLite, with the servers stopped). The counting clients' data is elsewhere (`m/`,
 * `count/`, `s/`, `item/`): the workload's checker (checker.ts) judges it as on any run.
 *
 * Once every fault is healed, each space's log (of `doc/`, and every row a restore or revert
 * wrote) is read back, replayed from the space's start, and judged ({@link judgeHistory}):
 * - each restore or revert is one commit: a version of its own, every row made by it;
 * - a restore to N of prefix P changed keys under P alone, and left P as it was at N;
 * - a revert left each key its cause changed (with no later change of another cause) at its value
 *   before the cause's first change, changed no key the cause did not, treated each conflict
 *   by its policy (`stop`: no version at all), and left no key holding a value the cause wrote
 *   unless it reported it as a conflict: others' values stand;
 * - one that answered says what its version holds (its changes, and a revert's conflicts); one
 *   that failed (its server or process killed, the store faulted) made at most one version, and
 *   that version is whole, as above;
 * - the servers read as of each such version (`at`, through housekeeping's checkpoints) what the
 *   replay has; every edit acknowledged is in the log.
 */
import { spawn } from 'node:child_process';
import type { JSONValue } from '../../src/index.js';
import type { ConflictPolicy, PlannedChange, RevertCause, RevertConflict } from '../../src/backend.js';
import type { Anomaly } from './checker.js';
import { bundled, ROOT } from './processes.js';
import type { ClientEnvironment } from './raw-client.js';
import { retry, sleep } from './retry.js';
import type { Random } from './rng.js';
import type { Deployment } from './topologies.js';

/** The editors, and how many keys they share (so that their writes meet, and reverts meet conflicts). */
export const USERS = ['alice', 'bob'];
const KEYS = 6;
export const DOC = 'doc/';

/** A restore or a revert, as the runner asks for it (a server's `/chaos/history-op`, or `OPERATE`). */
export type HistoryOperation =
  | { kind: 'restore'; space: string; to: number; prefix: string }
  | { kind: 'revert'; space: string; cause: RevertCause; onConflict: ConflictPolicy };

/** A row of a space's log as `/chaos/log` gives it: a change (no `before`: absent; no `after`: deleted) and what made it. */
export interface LogRow {
  version: number;
  seq: number;
  key: string;
  before?: JSONValue;
  after?: JSONValue;
  by: { kind: string; userID?: string | null; to?: number; prefix?: string; cause?: RevertCause };
}

/** The rows the judge reads: every change of `doc/`, and every row of a restore or revert, wherever it is. */
export function logRowsOf(changes: ReadonlyArray<LogRow & { at?: number }>): LogRow[] {
  return changes
    .filter((row) => 'key' in row && (row.key.startsWith(DOC) || row.by.kind === 'restore' || row.by.kind === 'revert'))
    .map(({ version, seq, key, before, after, by }) => ({
      version,
      seq,
      key,
      ...(before !== undefined && { before }),
      ...(after !== undefined && { after }),
      by,
    }));
}

/** One restore or revert tried, and what came of it. */
export interface OperationAttempt {
  operation: HistoryOperation;
  via: 'server' | 'operator' | 'operator, servers stopped';
  /** `done`: answered (`answer`); `gone`: its version not kept, refused; `failed`: no answer (a fault, or its process killed). */
  outcome: 'done' | 'gone' | 'failed';
  answer?: { version?: number; changes: PlannedChange[]; conflicts?: RevertConflict[]; stopped?: boolean };
  detail?: string;
}

/** One editor's write. */
export interface Edit {
  space: string;
  user: string;
  n: number;
  key: string;
  del: boolean;
  acknowledged: boolean;
}

export interface HistoryRecord {
  attempts: OperationAttempt[];
  edits: Edit[];
}

/** What is read back at the end: each space's log from its start, and reads of it as of versions. */
export interface HistoryEvidence {
  /** Per space, the first version its history keeps, and the rows (see {@link logRowsOf}). */
  logs: Map<string, { from: number; rows: LogRow[] }>;
  /** A server's `at(version, {prefix})`, by {@link readKey}. */
  reads: Map<string, Array<[string, JSONValue]>>;
  /** Each space's data at the end (a full pull), whose `doc/` the log replayed must equal. */
  live?: ReadonlyMap<string, ReadonlyMap<string, JSONValue>>;
}

type Control = (env: ClientEnvironment, name: string, query: string, body?: string) => Promise<Response>;
type Recorder = (kind: string, detail: string, window?: { from?: number }) => void;

/** The editors' writes, each editor one at a time, until `going` says stop. */
export async function editLoop(
  env: ClientEnvironment,
  spaces: readonly string[],
  control: Control,
  rng: Random,
  going: () => boolean,
  edits: Edit[],
): Promise<void> {
  let n = 0;
  await Promise.all(
    USERS.map(async (user) => {
      const draw = rng.fork();
      while (going()) {
        await sleep(draw.int(40, 200));
        const edit = { space: draw.pick(spaces), user, n: ++n, key: `${DOC}${draw.int(0, KEYS - 1)}`, del: draw.chance(0.15) };
        const response = await control(
          env,
          'edit',
          `space=${encodeURIComponent(edit.space)}&user=${user}&n=${edit.n}&key=${encodeURIComponent(edit.key)}&del=${edit.del ? 1 : 0}`,
        ).catch(() => undefined);
        edits.push({ ...edit, acknowledged: response?.status === 200 });
      }
    }),
  );
}

/** Restores and reverts, one at a time, until `going` says stop. */
export async function historyLoop(
  env: ClientEnvironment,
  deployment: Deployment,
  spaces: readonly string[],
  control: Control,
  rng: Random,
  going: () => boolean,
  record: Recorder,
  attempts: OperationAttempt[],
  clockOffset: () => number,
): Promise<void> {
  // Versions seen in each space, to restore to and to bound reverts' windows: some seconds back.
  const seen = new Map<string, number[]>();
  const versionOf = (space: string) =>
    control(env, 'version', `space=${encodeURIComponent(space)}`)
      .then(async (response) => (response.status === 200 ? ((await response.json()) as { version: number }).version : undefined))
      .catch(() => undefined);
  for (const space of spaces) {
    const version = await versionOf(space);
    if (version !== undefined) seen.set(space, [version]);
  }
  while (going()) {
    await sleep(rng.int(300, 1_500));
    if (!going()) return;
    const space = rng.pick(spaces);
    const now = await versionOf(space);
    if (now === undefined) continue;
    const versions = seen.get(space) ?? [];
    seen.set(space, [...versions, now].slice(-10));
    if (versions.length === 0) continue;
    const then = rng.pick(versions);
    const operation: HistoryOperation = rng.chance(0.5)
      ? { kind: 'restore', space, to: then, prefix: rng.chance(0.7) ? DOC : `${DOC}${rng.int(0, KEYS - 1)}` }
      : {
          kind: 'revert',
          space,
          cause: { userID: rng.pick(USERS), ...(rng.chance(0.5) && then < now && { versions: [then + 1, now] as [number, number] }) },
          onConflict: rng.pick(['skip', 'overwrite', 'stop'] as const),
        };
    const from = performance.now();
    const operator = deployment.operator !== undefined && rng.chance(deployment.operator.exclusive ? 1 / 6 : 1 / 3) ? deployment.operator : undefined;
    let attempt: OperationAttempt;
    if (operator !== undefined) {
      const kill = rng.chance(0.5) ? (rng.chance(0.5) ? { asItCalls: true, ms: rng.int(0, 30) } : { asItCalls: false, ms: rng.int(50, 2_500) }) : undefined;
      const run = () => operatorProcess({ ...operator.env, OFFSET_MS: String(clockOffset()) }, operation, kill);
      attempt = operator.exclusive ? await deployment.withServersStopped(run) : await run();
    } else {
      try {
        const response = await control(env, 'history-op', `space=${encodeURIComponent(space)}`, JSON.stringify(operation));
        const text = await response.text();
        attempt =
          response.status === 200
            ? { operation, via: 'server', outcome: 'done', answer: JSON.parse(text) }
            : { operation, via: 'server', outcome: response.status === 410 ? 'gone' : 'failed', detail: `${response.status}: ${text.slice(0, 200)}` };
      } catch (error) {
        attempt = { operation, via: 'server', outcome: 'failed', detail: String(error) };
      }
    }
    attempts.push(attempt);
    const what =
      operation.kind === 'restore'
        ? `restore ${space} ${operation.prefix} to ${operation.to}`
        : `revert ${space} ${JSON.stringify(operation.cause)} (${operation.onConflict})`;
    record(
      `${operation.kind} ${attempt.via === 'server' ? 'on a server' : `by an operator's process${attempt.via === 'operator' ? '' : ', the servers stopped'}`}${attempt.detail?.startsWith('killed') ? ', killed -9' : ''}`,
      `${what}: ${attempt.outcome}${attempt.answer?.version !== undefined ? ` at ${attempt.answer.version}` : ''}${attempt.detail ? ` (${attempt.detail})` : ''}`,
      { from },
    );
  }
}

/**
 * An operator's process (server.ts with OPERATE) running `operation`, killed -9 after `kill.ms`
 * when given: from its start, or (`asItCalls`) from the moment it calls the backend API.
 */
async function operatorProcess(
  env: Record<string, string>,
  operation: HistoryOperation,
  kill: { asItCalls: boolean; ms: number } | undefined,
): Promise<OperationAttempt> {
  const via = 'operator' as const;
  const child = spawn(process.execPath, [await bundled('test/chaos/server.ts')], {
    cwd: ROOT,
    env: { ...process.env, ...env, NAME: 'operator', OPERATE: JSON.stringify(operation) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let killed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const killAfter = (ms: number) => (timer = setTimeout(() => ((killed = true), child.kill('SIGKILL')), ms));
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    output += text;
    if (kill?.asItCalls && timer === undefined && output.includes('{"operating"')) killAfter(kill.ms);
  });
  child.stderr.setEncoding('utf8').on('data', (text: string) => (output += text));
  if (kill !== undefined && !kill.asItCalls) killAfter(kill.ms);
  // Only a hang otherwise: the operation takes a second or two, under faults a few more.
  const hang = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (status) => resolve(status)));
  clearTimeout(timer);
  clearTimeout(hang);
  const line = output.split('\n').find((text) => text.startsWith('{"result"') || text.startsWith('{"gone"'));
  if (code === 0 && line !== undefined) {
    const said = JSON.parse(line) as { result?: OperationAttempt['answer']; gone?: string };
    return said.result !== undefined ? { operation, via, outcome: 'done', answer: said.result } : { operation, via, outcome: 'gone', detail: said.gone };
  }
  // Node ends an uncaught error's report with its version: the error's own line says more.
  const lines = output.trim().split('\n');
  const last = (lines.findLast((text) => /Error\b/.test(text)) ?? lines.at(-1) ?? '').slice(0, 200);
  return {
    operation,
    via,
    outcome: 'failed',
    detail: killed ? `killed ${kill!.asItCalls ? `${kill!.ms} ms after it called` : `after ${kill!.ms} ms`}` : `exit ${code}: ${last}`,
  };
}

/** The key of a read as of `version` under `prefix` in {@link HistoryEvidence.reads}. */
export function readKey(space: string, version: number, prefix: string): string {
  return `${space} ${version} ${prefix}`;
}

/** The reads as of versions the judge compares with its replay: each restore's or revert's version (of `doc/`), and each restore's target (of its prefix). */
export function readsWanted(logs: HistoryEvidence['logs']): Array<{ space: string; version: number; prefix: string }> {
  const wanted = new Map<string, { space: string; version: number; prefix: string }>();
  for (const [space, { rows }] of logs) {
    for (const { version, by } of rows) {
      if (by.kind !== 'restore' && by.kind !== 'revert') continue;
      wanted.set(readKey(space, version, DOC), { space, version, prefix: DOC });
      if (by.kind === 'restore' && typeof by.to === 'number' && typeof by.prefix === 'string')
        wanted.set(readKey(space, by.to, by.prefix), { space, version: by.to, prefix: by.prefix });
    }
  }
  return [...wanted.values()];
}

/** Reads each space's log and the reads the judge wants from a server, once every fault is healed. */
export async function readEvidence(
  env: ClientEnvironment,
  control: Control,
  spaces: readonly string[],
): Promise<{ evidence: HistoryEvidence; anomalies: Anomaly[] }> {
  const evidence: HistoryEvidence = { logs: new Map(), reads: new Map() };
  const anomalies: Anomaly[] = [];
  for (const space of spaces) {
    try {
      const response = await retry(() => control(env, 'log', `space=${encodeURIComponent(space)}`), 40);
      evidence.logs.set(space, (await response.json()) as { from: number; rows: LogRow[] });
    } catch (error) {
      anomalies.push({ kind: 'history', detail: `${space}: its history could not be read once the faults were healed: ${String(error).slice(0, 300)}` });
    }
  }
  for (const { space, version, prefix } of readsWanted(evidence.logs)) {
    try {
      const response = await retry(() => control(env, 'at', `space=${encodeURIComponent(space)}&version=${version}&prefix=${encodeURIComponent(prefix)}`), 40);
      evidence.reads.set(readKey(space, version, prefix), ((await response.json()) as { entries: Array<[string, JSONValue]> }).entries);
    } catch (error) {
      anomalies.push({ kind: 'history', detail: `${space}: could not be read as of version ${version} (${prefix}): ${String(error).slice(0, 300)}` });
    }
  }
  return { evidence, anomalies };
}

/** Judges the restores and reverts of a run by each space's log, replayed (see the top of this file). */
export function judgeHistory(record: HistoryRecord, evidence: HistoryEvidence, { lossAllowed = false } = {}, counts = { restores: 0, reverts: 0 }): Anomaly[] {
  const anomalies: Anomaly[] = [];
  const add = (detail: string) => anomalies.push({ kind: 'history', detail });
  for (const [space, { from, rows: unsorted }] of evidence.logs) {
    const rows = [...unsorted].sort((a, b) => a.version - b.version || a.seq - b.seq);
    if (from > (rows[0]?.version ?? Infinity)) add(`${space}: its history keeps versions from ${from} only, after its first change of ${DOC}`);
    const replay = new Replay(rows.filter(({ key }) => key.startsWith(DOC)));
    if (replay.broken !== undefined) add(`${space}: ${replay.broken}`);
    const live = evidence.live?.get(space);
    if (live !== undefined) {
      const difference = firstDifference(new Map([...live].filter(([key]) => key.startsWith(DOC))), replay.at(Infinity, DOC));
      if (difference !== undefined) add(`${space}: its data at the end differs from its log replayed: ${difference}`);
    }
    const attempts = record.attempts.filter(({ operation }) => operation.space === space);
    const byVersion = new Map<number, LogRow[]>();
    for (const row of rows) if (row.by.kind === 'restore' || row.by.kind === 'revert') byVersion.set(row.version, [...(byVersion.get(row.version) ?? []), row]);
    // Failed attempts each explain at most one version of their operation's.
    const unexplained = attempts.filter(({ outcome }) => outcome === 'failed');
    for (const [version, made] of byVersion) {
      const all = rows.filter((row) => row.version === version);
      const origin = made[0]!.by;
      if (all.length !== made.length || made.some(({ by }) => JSON.stringify(by) !== JSON.stringify(origin))) {
        add(`${space}: version ${version} mixes a ${origin.kind}'s rows with others': ${JSON.stringify(all.map(({ key, by }) => [key, by]).slice(0, 6))}`);
        continue;
      }
      const answered = attempts.find(({ answer }) => answer?.version === version);
      let operation = answered?.operation;
      if (answered === undefined) {
        const i = unexplained.findIndex(({ operation: candidate }) => sameOrigin(candidate, origin));
        if (i < 0) {
          add(
            `${space}: version ${version}, a ${origin.kind} (${JSON.stringify(origin)}), is not one any attempt that failed could have made (applied twice?)`,
          );
          continue;
        }
        operation = unexplained.splice(i, 1)[0]!.operation;
      } else if (!sameOrigin(answered.operation, origin)) {
        add(`${space}: version ${version} was answered for ${JSON.stringify(answered.operation)}, and its rows are made by ${JSON.stringify(origin)}`);
        continue;
      }
      if (operation!.kind === 'restore') counts.restores++;
      else counts.reverts++;
      const where = `${space}: ${origin.kind} at version ${version}${answered === undefined ? ' (no answer came)' : ''}`;
      if (answered?.answer !== undefined) {
        const reported = new Map(answered.answer.changes.map((change) => [change.key, change]));
        const mismatch = made.find(
          (row) => !reported.has(row.key) || !same(reported.get(row.key)!.before, row.before) || !same(reported.get(row.key)!.after, row.after),
        );
        if (mismatch !== undefined || reported.size !== made.length)
          add(`${where}: answered ${reported.size} changes, and its version holds ${made.length}${mismatch ? `, among them ${JSON.stringify(mismatch)}` : ''}`);
      }
      if (operation!.kind === 'restore') judgeRestore(where, operation!, version, made, replay, add);
      // A failed revert's policy is not in its origin: that of the attempts that asked for its cause.
      else
        judgeRevert(
          where,
          operation!.cause,
          answered === undefined ? policyOf(attempts, origin) : operation!.onConflict,
          version,
          made,
          rows,
          replay,
          answered?.answer?.conflicts,
          add,
        );
      // The servers read as of the version what the replay has.
      compareRead(where, evidence.reads.get(readKey(space, version, DOC)), replay.at(version, DOC), `at(${version}, ${JSON.stringify(DOC)})`, add);
      if (operation!.kind === 'restore')
        compareRead(
          where,
          evidence.reads.get(readKey(space, operation!.to, operation!.prefix)),
          replay.at(operation!.to, operation!.prefix),
          `at(${operation!.to}, ${JSON.stringify(operation!.prefix)})`,
          add,
        );
    }
    for (const { operation, answer } of attempts) {
      if (answer === undefined) continue;
      if (answer.version !== undefined && !byVersion.has(answer.version) && !lossAllowed)
        add(`${space}: a ${operation.kind} answered with version ${answer.version}, which the log does not hold as one: ${JSON.stringify(operation)}`);
      if (answer.version === undefined && answer.changes.length > 0 && !answer.stopped)
        add(`${space}: a ${operation.kind} answered ${answer.changes.length} changes and no version: ${JSON.stringify(operation)}`);
      if (answer.stopped && (answer.conflicts?.length ?? 0) === 0) add(`${space}: a revert stopped with no conflict: ${JSON.stringify(operation)}`);
    }
  }
  if (!lossAllowed) {
    const written = new Set<string>();
    for (const [space, { rows }] of evidence.logs)
      for (const row of rows) if (row.by.kind === 'backend' && row.after !== undefined) written.add(`${space} ${row.key} ${JSON.stringify(row.after)}`);
    const lost = record.edits.filter(
      (edit) =>
        edit.acknowledged &&
        !edit.del &&
        evidence.logs.has(edit.space) &&
        !written.has(`${edit.space} ${edit.key} ${JSON.stringify({ user: edit.user, n: edit.n })}`),
    );
    if (lost.length > 0) add(`${lost.length} acknowledged edits are not in their space's log, the first ${JSON.stringify(lost[0])}`);
  }
  return anomalies;
}

/** A restore to N of prefix P: rows under P alone, and P then as it was at N. */
function judgeRestore(
  where: string,
  operation: Extract<HistoryOperation, { kind: 'restore' }>,
  version: number,
  made: LogRow[],
  replay: Replay,
  add: (detail: string) => void,
): void {
  const outside = made.filter(({ key }) => !key.startsWith(operation.prefix));
  if (outside.length > 0)
    add(`${where}: changed ${outside.length} keys outside its prefix ${JSON.stringify(operation.prefix)}, the first ${JSON.stringify(outside[0])}`);
  const difference = firstDifference(replay.at(version, operation.prefix), replay.at(operation.to, operation.prefix));
  if (difference !== undefined)
    add(`${where}: ${JSON.stringify(operation.prefix)} is not as it was at ${operation.to}: ${difference} (a restore applied in part?)`);
}

/**
 * A revert of a cause: each key the cause changed, with no later change of another cause, back to
 * its value before the cause's first change; a conflict (a later change of another) left or
 * written back by the policy (`stop`: no version at all); no other key changed; no key left
 * holding a value the cause wrote unless a conflict.
 */
function judgeRevert(
  where: string,
  cause: RevertCause,
  policy: ConflictPolicy | 'any',
  version: number,
  made: LogRow[],
  rows: LogRow[],
  replay: Replay,
  reported: RevertConflict[] | undefined,
  add: (detail: string) => void,
): void {
  const touched = new Map<string, { first: LogRow; later: number; values: Set<string> }>();
  for (const row of rows) {
    if (row.version >= version || !row.key.startsWith(DOC)) continue;
    const seen = touched.get(row.key);
    if (madeBy(cause, row)) {
      if (seen === undefined) touched.set(row.key, { first: row, later: 0, values: new Set([JSON.stringify(row.after)]) });
      else seen.values.add(JSON.stringify(row.after));
    } else if (seen !== undefined) seen.later++;
  }
  const before = replay.at(version - 1, DOC);
  const after = replay.at(version, DOC);
  const conflicts = [...touched].filter(([key, { first, later }]) => later > 0 && !same(before.get(key), first.before)).map(([key]) => key);
  for (const row of made) if (!touched.has(row.key)) add(`${where}: changed ${JSON.stringify(row.key)}, which its cause never changed`);
  if (policy === 'stop' && conflicts.length > 0)
    add(`${where}: its policy is stop, and it met ${conflicts.length} conflicts (${conflicts.slice(0, 3).join(', ')})`);
  if (reported !== undefined && JSON.stringify(reported.map(({ key }) => key).sort()) !== JSON.stringify([...conflicts].sort()))
    add(`${where}: reported the conflicts ${JSON.stringify(reported.map(({ key }) => key))}, and the log shows ${JSON.stringify(conflicts)}`);
  for (const [key, { first, values }] of touched) {
    const now = after.get(key);
    const conflict = conflicts.includes(key);
    if (!conflict && !same(now, first.before))
      add(
        `${where}: left ${JSON.stringify(key)} at ${JSON.stringify(now)}, not its value before the cause's first change, ${JSON.stringify(first.before)} (a revert applied in part?)`,
      );
    if (conflict) {
      const allowed = policy === 'skip' ? [before.get(key)] : policy === 'overwrite' ? [first.before] : [before.get(key), first.before];
      if (!allowed.some((value) => same(now, value)))
        add(`${where}: left the conflict ${JSON.stringify(key)} at ${JSON.stringify(now)}, which its policy (${policy}) does not make`);
    }
    if (!conflict && now !== undefined && values.has(JSON.stringify(now)))
      add(`${where}: ${JSON.stringify(key)} still holds ${JSON.stringify(now)}, which its cause wrote, and was not reported as a conflict`);
  }
}

/** Whether the cause covers a row (the fields the run's reverts use: a user, a window of versions). */
function madeBy(cause: RevertCause, row: LogRow): boolean {
  if (cause.versions !== undefined && (row.version < cause.versions[0] || row.version > cause.versions[1])) return false;
  if (cause.userID !== undefined && row.by.userID !== cause.userID) return false;
  return true;
}

function sameOrigin(operation: HistoryOperation, by: LogRow['by']): boolean {
  if (operation.kind === 'restore') return by.kind === 'restore' && by.to === operation.to && by.prefix === operation.prefix;
  return by.kind === 'revert' && same(by.cause as JSONValue, operation.cause as JSONValue);
}

/** The policy of the failed attempts that asked to revert `origin`'s cause: theirs, or `any` (a skip or an overwrite) when they differ. */
function policyOf(attempts: OperationAttempt[], origin: LogRow['by']): ConflictPolicy | 'any' {
  const policies = new Set(
    attempts
      .filter(({ operation, outcome }) => outcome === 'failed' && sameOrigin(operation, origin))
      .map(({ operation }) => (operation as Extract<HistoryOperation, { kind: 'revert' }>).onConflict),
  );
  return policies.size === 1 ? [...policies][0]! : 'any';
}

/** A space's `doc/` replayed from its log: its state as of any version, and whether each row's value before is what came before it. */
class Replay {
  readonly #rows: LogRow[];
  broken: string | undefined;

  constructor(rows: LogRow[]) {
    this.#rows = rows;
    const state = new Map<string, JSONValue>();
    for (const row of rows) {
      if (this.broken === undefined && !same(state.get(row.key), row.before))
        this.broken = `the log's change of ${JSON.stringify(row.key)} at version ${row.version} says it was ${JSON.stringify(row.before)}, and the changes before it left ${JSON.stringify(state.get(row.key))}`;
      if (row.after === undefined) state.delete(row.key);
      else state.set(row.key, row.after);
    }
  }

  /** The keys under `prefix` as of `version`. */
  at(version: number, prefix: string): Map<string, JSONValue> {
    const state = new Map<string, JSONValue>();
    for (const row of this.#rows) {
      if (row.version > version) break;
      if (!row.key.startsWith(prefix)) continue;
      if (row.after === undefined) state.delete(row.key);
      else state.set(row.key, row.after);
    }
    return state;
  }
}

function compareRead(
  where: string,
  read: Array<[string, JSONValue]> | undefined,
  replayed: Map<string, JSONValue>,
  what: string,
  add: (detail: string) => void,
): void {
  if (read === undefined) return;
  const difference = firstDifference(new Map(read), replayed);
  if (difference !== undefined) add(`${where}: a server's ${what} differs from the log replayed: ${difference}`);
}

/** The first way `actual` differs from `expected`, if it does. */
function firstDifference(actual: ReadonlyMap<string, JSONValue>, expected: ReadonlyMap<string, JSONValue>): string | undefined {
  for (const [key, value] of expected)
    if (!same(actual.get(key), value)) return `${JSON.stringify(key)} is ${JSON.stringify(actual.get(key))}, not ${JSON.stringify(value)}`;
  for (const [key, value] of actual) if (!expected.has(key)) return `${JSON.stringify(key)} is ${JSON.stringify(value)}, and was absent`;
  return undefined;
}

/** Whether two JSON values (undefined: absent) are equal, whatever their objects' key order. */
function same(a: JSONValue | undefined, b: JSONValue | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const [x, y] = [a as Record<string, JSONValue>, b as Record<string, JSONValue>];
  const keys = Object.keys(x);
  return keys.length === Object.keys(y).length && keys.every((key) => Object.hasOwn(y, key) && same(x[key], y[key]));
}
