/**
 * What a chaos run records: every request a client sent and what it got back, the writes made
 * from the backend, the imports, the faults, and every process that ended without the suite
 * killing it. The checker (checker.ts) judges a run by this record alone.
 */
import type { JSONValue } from '../../src/index.js';

/** One request of a client group and its answer. */
export interface Exchange {
  /** The client group that sent it (a real client's too: read from its body). */
  group: string;
  /**
   * The client instance that sent it, when a group has several over time: a real client closed
   * and opened again starts from what it had stored locally, which may be older than what the
   * instance before it was told. Absent: the group itself (a raw client).
   */
  instance?: string;
  space: string;
  kind: 'push' | 'pull';
  /** When it was sent and when its answer (or failure) came, in ms of `performance.now()`. */
  start: number;
  end: number;
  /** The body sent. */
  body: PushBody | PullBody;
  /** The status, or `network` when no answer came (a killed server, a cut connection). */
  status: number | 'network';
  /** The answer's JSON body, for a 200; its text otherwise. */
  answer: unknown;
}

export interface PushBody {
  pushVersion: 1;
  clientGroupID: string;
  mutations: Array<{ clientID: string; id: number; name: string; args: JSONValue }>;
}

export interface PullBody {
  pullVersion: 1;
  clientGroupID: string;
  cookie: JSONValue;
}

export interface PullAnswer {
  cookie: JSONValue;
  lastMutationIDChanges: Record<string, number>;
  patch: Array<{ op: 'put'; key: string; value: JSONValue } | { op: 'del'; key: string } | { op: 'clear' }>;
}

/** A write the runner made through a server's backend door: `backend/<n>` and its counter. */
export interface BackendWrite {
  space: string;
  n: number;
  /** Whether the server said it committed. */
  acknowledged: boolean;
}

/** An import the runner made through a server's backend door. */
export interface ImportAttempt {
  space: string;
  /** The dump was cut short before its end line. */
  cut: boolean;
  /**
   * What the server said: `imported`, `refused` (a DumpError), `abandoned` (a StagingLostError:
   * housekeeping took its staging area, nothing was applied), or an HTTP status or `network`.
   */
  outcome: 'imported' | 'refused' | 'abandoned' | number | 'network';
  /** The entries of the whole dump. */
  entries: Record<string, JSONValue>;
  end: number;
}

/** A client group's state once the run settled: what it holds after its last pull. */
export interface Settled {
  group: string;
  space: string;
  view: Map<string, JSONValue>;
  /** Why the group could not settle within the settling time (its view is then not judged): what the servers last answered it. */
  unsettled?: string;
}

/** A fault the runner injected, from when its injection began to when it was healed (`performance.now()` ms, as exchanges). */
export interface Fault {
  kind: string;
  from: number;
  to: number;
  detail?: string;
  /** It may have lost acknowledged commits (a failover with asynchronous replication). */
  losesCommits?: boolean;
}

export interface History {
  exchanges: Exchange[];
  backend: BackendWrite[];
  imports: ImportAttempt[];
  faults: Fault[];
  /** Processes that ended though the suite did not kill them, each with the end of its output. */
  crashes: string[];
  /** Failures of the runner itself (an unhandled rejection in a client): never expected. */
  runnerErrors: string[];
  /** Operators' commands that should have been refused (a move with the wrong flags, of a space that does not exist) and were not. */
  operatorCommands: string[];
  /** Spaces no server could serve once every fault was healed. */
  unavailable: string[];
  /** Client groups, as they hold their data at the end. */
  settled: Settled[];
  /** The server's data at the end, per space: a full pull by a client group of its own. */
  truth: Map<string, Map<string, JSONValue>>;
}
