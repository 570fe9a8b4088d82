/**
 * Judges a chaos run by its record (history.ts), as the clients and the data see it:
 *
 * - every acknowledged mutation is applied exactly once: its record `m/<client>/<id>` is in the
 *   server's data, and the client's counter `count/<client>` equals its number of records (a
 *   mutation applied twice adds to the counter and overwrites its record); mutations are applied
 *   in order, with no gap;
 * - a client's lastMutationID never goes backwards, and neither does a group's cookie, by the
 *   real client's own order (it throws on either); an answer with the cookie it was sent carries
 *   no change (the client drops those);
 * - after a push is answered 200, the group's next pull reflects it (where loss is admitted, a
 *   failover between the two may have lost it: the pull then shows it is not applied);
 * - a group that pulled a moment before is never reset (a patch from a clear): no restore, revert,
 *   move or restart makes one, and tombstones go only days of the servers' clock later;
 * - at the end every client group holds the server's data;
 * - no answer is a 5xx but 503, nor a refusal of a well-formed request, and once the faults
 *   are healed every space is served;
 * - no process ends unless the suite killed it;
 * - writes acknowledged by the backend door are there, once; a dump cut short is never imported;
 * - an operator's command that cannot be right (a move with the wrong flags, of a space that
 *   does not exist) is refused.
 *
 * Where the topology admits losing acknowledged commits (asynchronous replication, failed over),
 * a lost mutation is accepted only if its group was then told ClientStateNotFound, was opened
 * again from a local store older than the loss (it then holds nothing of it, and converges), or
 * was lost whole (the promoted store takes it for a forked group, a known limit): a loss a
 * client holding it was never told of is an anomaly. Cookies and lastMutationIDs are
 * judged per client instance, each by what it was told.
 */
import type { JSONValue } from '../../src/index.js';
import type { Exchange, Fault, History, PullAnswer, PullBody, PushBody } from './history.js';

export interface Anomaly {
  kind:
    | 'server-error'
    | 'refused'
    | 'cookie-backwards'
    | 'changes-under-same-cookie'
    | 'lmid-backwards'
    | 'push-not-reflected'
    | 'acknowledged-lost'
    | 'applied-twice'
    | 'out-of-order'
    | 'diverged'
    | 'backend-lost'
    | 'backend-applied-twice'
    | 'migration'
    /** A restore or revert not one whole commit, not what it should have made, or read back wrong (restore-check.ts). */
    | 'history'
    /** A group reset (a patch from a clear) though it had pulled a moment before (restores and reverts are ordinary patches). */
    | 'reset'
    | 'cut-import-accepted'
    | 'import-wrong'
    | 'process-died'
    | 'operator-command-accepted'
    | 'space-unavailable'
    | 'not-settled'
    | 'runner-error'
    | 'webhook'
    /** The feed soak (feed-soak.ts): a gap, a repeat, a stranger or a reordering in a space's feed. */
    | 'feed';
  detail: string;
}

export interface CheckOptions {
  /** Acknowledged commits may be lost (asynchronous replication), if their group is told. */
  lossAllowed?: boolean;
  /**
   * A group may be reset though it pulled a moment before: where a failover or a move happens.
   * Resets there were seen in runs of one minute (routed, standby; seed 31) and are not judged
   * until their cause is known; elsewhere a reset soon after a pull is an anomaly.
   */
  resetsAllowed?: boolean;
}

export interface Verdict {
  anomalies: Anomaly[];
  /** Acknowledged writes lost where the topology admits it (their groups told, for clients'). */
  admittedLosses: number;
  /** Pushes answered 200 whose commit a failover lost where the topology admits it, shown to their client by the next pull's lastMutationID. */
  pushesLost: number;
  /** Acknowledged mutations whose application was checked. */
  mutationsChecked: number;
  /** Requests judged. */
  requests: number;
}

/** Judges `history`. */
export function check(history: History, options: CheckOptions = {}): Verdict {
  const anomalies: Anomaly[] = [];
  const add = (kind: Anomaly['kind'], detail: string) => anomalies.push({ kind, detail });
  // Each client instance is judged by what it was told: one opened again starts from its own store.
  const instances = new Map<string, Exchange[]>();
  const instancesOf = new Map<string, Set<string>>();
  for (const exchange of history.exchanges) {
    const instance = exchange.instance ?? exchange.group;
    const key = `${exchange.group}\u0000${instance}`;
    let list = instances.get(key);
    if (list === undefined) instances.set(key, (list = []));
    list.push(exchange);
    let seen = instancesOf.get(exchange.group);
    if (seen === undefined) instancesOf.set(exchange.group, (seen = new Set()));
    seen.add(instance);
  }
  /** The highest id acknowledged per client, the space it lives in, and when its group was told ClientStateNotFound. */
  const judging: Judging = {
    acknowledged: new Map(),
    toldLost: new Map(),
    lossWindows: options.lossAllowed ? history.faults.filter((fault) => fault.losesCommits) : [],
    resetsAllowed: options.lossAllowed === true || options.resetsAllowed === true,
    pushesLost: 0,
    add,
  };
  for (const exchanges of instances.values()) judgeGroup(exchanges[0]!.group, exchanges, judging);
  const { acknowledged, toldLost } = judging;

  let mutationsChecked = 0;
  let admittedLosses = 0;
  const clients = clientsIn(history.truth);
  // Groups of which the data holds something: a group lost whole (every commit it made lost in a
  // failover) is, to the promoted store, a group it never saw, like one a reloaded page forks.
  const present = new Set([...acknowledged].filter(([client]) => (clients.get(client)?.records.size ?? 0) > 0).map(([, { group }]) => group));
  for (const [client, { id, space, group }] of acknowledged) {
    const records = clients.get(client)?.records ?? new Set<number>();
    for (let n = 1; n <= id; n++) {
      mutationsChecked++;
      if (records.has(n)) continue;
      // A group opened again from what it had stored may hold nothing of a loss to be told of: its
      // data then converges (checked below), and the loss is the mode's. So does a group lost
      // whole: the store cannot tell it from a forked group, so it gets a reset, not
      // ClientStateNotFound, and is told only at its next push (docs: Known limits).
      if (options.lossAllowed && (toldLost.has(group) || (instancesOf.get(group)?.size ?? 0) > 1 || !present.has(group))) {
        admittedLosses++;
        continue;
      }
      add(
        'acknowledged-lost',
        `mutation ${n} of client ${client} (group ${group}, space ${JSON.stringify(space)}) was acknowledged, and is not in the data${options.lossAllowed ? ', and its group was never told ClientStateNotFound' : ''}`,
      );
      break;
    }
  }
  for (const [client, { records, count, space }] of clients) {
    if (count !== records.size)
      add('applied-twice', `client ${client} (space ${JSON.stringify(space)}): count ${count}, but ${records.size} distinct mutations applied`);
    const highest = Math.max(0, ...records);
    if (highest !== records.size)
      add('out-of-order', `client ${client} (space ${JSON.stringify(space)}): mutations up to ${highest} applied, but only ${records.size} of them`);
  }

  for (const { group, space, view, unsettled } of history.settled) {
    // Not a divergence: the servers never let it catch up, once every fault was healed.
    if (unsettled !== undefined) {
      add('not-settled', `group ${group} (space ${JSON.stringify(space)}) could not push what it had and pull within the settling time: ${unsettled}`);
      continue;
    }
    const truth = history.truth.get(space) ?? new Map<string, JSONValue>();
    const difference = firstDifference(view, truth, 'the server has');
    if (difference !== undefined) add('diverged', `group ${group} (space ${JSON.stringify(space)}) holds ${difference}`);
  }

  admittedLosses += checkBackend(history, add, options.lossAllowed === true);
  checkImports(history, add, options.lossAllowed === true);
  for (const crash of history.crashes) add('process-died', crash);
  for (const command of history.operatorCommands) add('operator-command-accepted', command);
  for (const space of history.unavailable) add('space-unavailable', space);
  for (const error of history.runnerErrors) add('runner-error', error);
  return { anomalies, admittedLosses, pushesLost: judging.pushesLost, mutationsChecked, requests: history.exchanges.length };
}

/** The real client's order of cookies: null lowest, objects by `order`, strings as strings. */
export function compareCookies(a: JSONValue, b: JSONValue): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  const order = (cookie: JSONValue): string | number =>
    typeof cookie === 'object' && cookie !== null && !Array.isArray(cookie) ? (cookie as { order: string | number }).order : (cookie as string | number);
  const [x, y] = [order(a), order(b)];
  if (typeof x === 'string' || typeof y === 'string') {
    const [sx, sy] = [String(x), String(y)];
    return sx < sy ? -1 : sx > sy ? 1 : 0;
  }
  return x - y;
}

/** What judging every client instance builds up, and what it needs of the whole history. */
interface Judging {
  /** The highest id acknowledged per client, the space it lives in, and its group. */
  acknowledged: Map<string, { id: number; space: string; group: string }>;
  /** When each group was told ClientStateNotFound. */
  toldLost: Map<string, number>;
  /** Faults that may have lost acknowledged commits, where the topology admits it. */
  lossWindows: Fault[];
  /** Resets are the mode's answer to a loss (asynchronous replication), not judged. */
  resetsAllowed: boolean;
  /** Pushes answered 200, lost in one of those windows, that the next pull showed as not applied. */
  pushesLost: number;
  add: (kind: Anomaly['kind'], detail: string) => void;
}

function judgeGroup(group: string, exchanges: Exchange[], judging: Judging): void {
  const { acknowledged, toldLost, lossWindows, add } = judging;
  // The client takes each answer as it comes: in the order they ended.
  const ordered = [...exchanges].sort((a, b) => a.end - b.end);
  const known = new Map<string, number>();
  let cookie: JSONValue = null;
  /** When the last pull answered with a cookie was sent: the cookie it holds is of a version at least that recent. */
  let lastPull: number | undefined;
  /** Pushes answered 200 that no pull has reflected yet: each client's highest id in it, and when it was answered. */
  let awaiting: Array<{ end: number; ids: Map<string, number> }> = [];
  for (const exchange of ordered) {
    const where = `group ${group}${exchange.instance ? ` (instance ${exchange.instance})` : ''}, ${exchange.kind} sent at ${exchange.start.toFixed(0)} ms`;
    if (exchange.status === 'network' || exchange.status === 503) continue;
    if (exchange.status !== 200) {
      add(exchange.status >= 500 ? 'server-error' : 'refused', `${where}: answered ${exchange.status}: ${String(exchange.answer).slice(0, 300)}`);
      continue;
    }
    const answer = exchange.answer as { error?: string } | null;
    if (answer !== null && typeof answer === 'object' && answer.error === 'ClientStateNotFound') {
      toldLost.set(group, exchange.end);
      continue;
    }
    if (answer !== null && typeof answer === 'object' && typeof answer.error === 'string') {
      add('refused', `${where}: answered ${JSON.stringify(answer).slice(0, 300)}`);
      continue;
    }
    if (exchange.kind === 'push') {
      const ids = new Map<string, number>();
      for (const { clientID, id } of (exchange.body as PushBody).mutations) {
        ids.set(clientID, Math.max(ids.get(clientID) ?? 0, id));
        const before = acknowledged.get(clientID);
        if (before === undefined || before.id < id) acknowledged.set(clientID, { id, space: exchange.space, group });
      }
      if (ids.size > 0) awaiting.push({ end: exchange.end, ids });
      continue;
    }
    const pull = exchange.answer as PullAnswer;
    const sent = (exchange.body as PullBody).cookie;
    // Tombstones go once a week of the servers' clock has passed (four jumps of two days, 4.5 s
    // or more), so a group that pulled less than that before holds a cookie no reset is due for.
    if (sent !== null && pull.patch[0]?.op === 'clear' && lastPull !== undefined && exchange.start - lastPull < RECENT_MS && !judging.resetsAllowed) {
      add(
        'reset',
        `${where}: reset (its patch a clear and ${pull.patch.length - 1} puts), ${(exchange.start - lastPull).toFixed(0)} ms after it sent a pull answered with cookie ${JSON.stringify(sent)}`,
      );
    }
    lastPull = exchange.start;
    const order = compareCookies(pull.cookie, sent);
    if (order < 0) add('cookie-backwards', `${where}: sent cookie ${JSON.stringify(sent)}, got ${JSON.stringify(pull.cookie)}`);
    if (order === 0 && (pull.patch.length > 0 || Object.keys(pull.lastMutationIDChanges).length > 0)) {
      add(
        'changes-under-same-cookie',
        `${where}: cookie ${JSON.stringify(sent)} came back with ${pull.patch.length} patch operations and ${JSON.stringify(pull.lastMutationIDChanges)}`,
      );
    }
    if (order > 0 && compareCookies(pull.cookie, cookie) < 0)
      add('cookie-backwards', `${where}: got ${JSON.stringify(pull.cookie)}, below ${JSON.stringify(cookie)} which it got before`);
    if (order > 0) {
      for (const [client, id] of Object.entries(pull.lastMutationIDChanges)) {
        const before = known.get(client) ?? 0;
        if (id < before) add('lmid-backwards', `${where}: client ${client}'s lastMutationID went from ${before} to ${id}`);
        known.set(client, Math.max(before, id));
        const acked = acknowledged.get(client);
        if (acked === undefined || acked.id < id) acknowledged.set(client, { id, space: exchange.space, group });
      }
      if (compareCookies(pull.cookie, cookie) > 0) cookie = pull.cookie;
    }
    // A push answered before this pull was sent is in what it read.
    const still: typeof awaiting = [];
    for (const push of awaiting) {
      if (push.end >= exchange.start) {
        still.push(push);
        continue;
      }
      // A commit lost to a failover between the answer and this pull is the mode's loss, and the
      // pull's lastMutationID shows it: the real client holds a mutation until a pull says it is
      // applied, so it pushes it again; a client that let it go pushes past it and is told
      // ClientStateNotFound. check judges the end: applied once, or the group told.
      const lost = lossWindows.some((fault) => fault.from <= exchange.end && fault.to >= push.end);
      for (const [client, id] of push.ids) {
        if ((known.get(client) ?? 0) >= id) continue;
        if (lost) judging.pushesLost++;
        else
          add(
            'push-not-reflected',
            `${where}: client ${client}'s push up to ${id} was answered 200 at ${push.end.toFixed(0)} ms, and this pull reports lastMutationID ${known.get(client) ?? 0}`,
          );
      }
    }
    awaiting = still;
  }
}

/** How recent a group's last pull must be for a reset to be judged: under two of the servers' clock jumps (run.ts), far from a week of them. */
const RECENT_MS = 2_500;

/** Each client's applied mutations (`m/<client>/<id>`) and counter (`count/<client>`) in the data. */
function clientsIn(truth: History['truth']): Map<string, { records: Set<number>; count: number; space: string }> {
  const clients = new Map<string, { records: Set<number>; count: number; space: string }>();
  const of = (client: string, space: string) => {
    let entry = clients.get(client);
    if (entry === undefined) clients.set(client, (entry = { records: new Set(), count: 0, space }));
    return entry;
  };
  for (const [space, data] of truth) {
    for (const [key, value] of data) {
      if (key.startsWith('count/')) of(key.slice('count/'.length), space).count = value as number;
      else if (key.startsWith('m/')) {
        const slash = key.lastIndexOf('/');
        of(key.slice(2, slash), space).records.add(Number(key.slice(slash + 1)));
      }
    }
  }
  return clients;
}

/** Checks the backend's writes; resolves with how many acknowledged ones were lost where loss is admitted (no client to tell). */
function checkBackend(history: History, add: (kind: Anomaly['kind'], detail: string) => void, lossAllowed: boolean): number {
  let lost = 0;
  const spaces = new Set(history.backend.map(({ space }) => space));
  for (const space of spaces) {
    const data = history.truth.get(space) ?? new Map<string, JSONValue>();
    const written = [...data.keys()].filter((key) => /^backend\/\d+$/.test(key)).length;
    const count = (data.get('backend/count') as number | undefined) ?? 0;
    if (count !== written) add('backend-applied-twice', `space ${JSON.stringify(space)}: backend/count is ${count}, but ${written} backend writes are there`);
    for (const { n, acknowledged } of history.backend) {
      if (!acknowledged || data.has(`backend/${n}`)) continue;
      if (lossAllowed) lost++;
      else add('backend-lost', `space ${JSON.stringify(space)}: backend write ${n} was acknowledged, and is not there`);
    }
  }
  return lost;
}

function checkImports(history: History, add: (kind: Anomaly['kind'], detail: string) => void, lossAllowed: boolean): void {
  const last = new Map<string, (typeof history.imports)[number]>();
  for (const attempt of history.imports) {
    if (attempt.cut && attempt.outcome === 'imported') add('cut-import-accepted', `space ${JSON.stringify(attempt.space)}: a dump cut short was imported`);
    if (!attempt.cut && attempt.outcome === 'refused') add('import-wrong', `space ${JSON.stringify(attempt.space)}: a whole dump was refused`);
    if (!attempt.cut && attempt.outcome === 'imported' && (last.get(attempt.space)?.end ?? -1) < attempt.end) last.set(attempt.space, attempt);
  }
  // A space's data is its last whole import's, or nothing: a cut one changes nothing.
  const spaces = new Set(history.imports.map(({ space }) => space));
  for (const space of spaces) {
    const expected = new Map(Object.entries(last.get(space)?.entries ?? {}));
    const actual = history.truth.get(space) ?? new Map<string, JSONValue>();
    // An import that got no answer may have been applied or not: either is fine.
    const uncertain = history.imports.some(
      (attempt) => attempt.space === space && !attempt.cut && (typeof attempt.outcome !== 'string' || attempt.outcome === 'network'),
    );
    const difference = firstDifference(actual, expected, 'its last whole import has');
    // Where a failover may lose acknowledged commits, the space may hold an earlier whole import
    // (each has a key of its own), or none, but never a mix nor a cut one.
    const earlier =
      lossAllowed &&
      (actual.size === 0 ||
        history.imports.some(
          (attempt) =>
            attempt.space === space &&
            !attempt.cut &&
            attempt.outcome !== 'refused' &&
            firstDifference(actual, new Map(Object.entries(attempt.entries)), '') === undefined,
        ));
    if (difference !== undefined && !uncertain && !earlier) add('import-wrong', `space ${JSON.stringify(space)} holds ${difference}`);
  }
}

/** A description of the first way `view` differs from `truth` (which `has` names), if it does. */
function firstDifference(view: ReadonlyMap<string, JSONValue>, truth: ReadonlyMap<string, JSONValue>, has: string): string | undefined {
  for (const [key, value] of truth) {
    if (!view.has(key)) return `no ${JSON.stringify(key)} (${has} ${JSON.stringify(value)})`;
    if (JSON.stringify(view.get(key)) !== JSON.stringify(value))
      return `${JSON.stringify(key)} = ${JSON.stringify(view.get(key))} (${has} ${JSON.stringify(value)})`;
  }
  for (const key of view.keys()) if (!truth.has(key)) return `${JSON.stringify(key)}, which ${has.replace(/ has$/, '')} does not have`;
  return undefined;
}
