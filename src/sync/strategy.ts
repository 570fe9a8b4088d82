import type { JSONValue } from '../protocol/json.js';
import type { PatchOperation } from '../protocol/pull-response.js';
import type { StorageTransaction } from '../storage/types.js';

/**
 * The seam between the protocol and how patches are computed. The handlers speak only to a
 * {@link SpaceSession}; the global version strategy (`global-version.ts`) is the one
 * implementation today, and a row-version strategy can slot in beside it.
 */
export type Strategy = (tx: StorageTransaction, space: string) => Promise<SpaceSession>;

/** One space, seen from inside one storage transaction. */
export interface SpaceSession {
  /** The live value at `key`, if any. */
  get(key: string): Promise<JSONValue | undefined>;
  /** Live entries in key order, from `start` (or `prefix`) on, while keys start with `prefix`. */
  scan(prefix: string, start?: { key: string; exclusive: boolean }): AsyncGenerator<readonly [string, JSONValue]>;
  /** Sets `key`, stamping the change for later pulls. */
  put(key: string, value: JSONValue): Promise<void>;
  /** Removes `key` (softly, so pulls can report it); a missing key is no change. */
  del(key: string): Promise<void>;

  /** A client's record, if the client ever pushed to this space. */
  getClient(clientID: string): Promise<ClientRecord | undefined>;
  /** Creates or updates a client's record. */
  putClient(clientID: string, record: ClientRecord): Promise<void>;
  /** A client group's record, if the group ever pushed to this space. */
  getGroup(clientGroupID: string): Promise<GroupRecord | undefined>;
  /** Creates a client group's record. */
  putGroup(clientGroupID: string, record: GroupRecord): Promise<void>;

  /** Makes this session's changes visible to pulls; call once, at the end of a push. */
  commit(): Promise<void>;
  /** What a client holding `cookie` needs to catch up, or `'ClientStateNotFound'`. */
  pull(cookie: JSONValue, clientGroupID: string | undefined): Promise<PullResult | 'ClientStateNotFound'>;
}

/** What the server knows of one client. */
export interface ClientRecord {
  clientGroupID: string;
  lastMutationID: number;
}

/** What the server knows of one client group. */
export interface GroupRecord {
  /** The user who first pushed for the group; null when requests are anonymous. */
  owner: string | null;
}

/** A successful pull, before it is shaped for its protocol version. */
export interface PullResult {
  cookie: JSONValue;
  patch: PatchOperation[];
  /** Clients of the group whose lastMutationID changed since the cookie (empty without a group). */
  lastMutationIDChanges: Record<string, number>;
}
