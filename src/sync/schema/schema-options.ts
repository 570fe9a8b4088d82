import type { JSONValue } from '../../protocol/json.js';
import type { Mutator } from '../transactions/mutator.js';

/**
 * The app's schema versions: today's, and the older ones whose clients are still served. A client
 * sends its `schemaVersion` with every pull and push, and after an upgrade the `replicache` client
 * pushes the pending mutations of its old client groups under their old version (mutation
 * recovery), so an older version's mutations keep arriving for as long as its clients may come
 * back. See docs/schema-changes.md.
 *
 * @example
 * schema: {
 *   current: '2',
 *   older: [{
 *     version: '1',
 *     // v1 sent addTodo({text}); v2's createTodo takes {title}.
 *     mutators: { addTodo: { name: 'createTodo', args: (args) => ({ title: (args as { text: string }).text }) } },
 *     // v1 clients read {text} where v2 stores {title}.
 *     read: { value: async (key, get) => { const todo = (await get(key)) as { title: string } | undefined; return todo && { text: todo.title }; } },
 *   }],
 * }
 */
export interface SchemaOptions {
  /** Today's schema version: its clients' mutations run as they are, and they read entries as stored. */
  current: string;
  /**
   * Older versions still served, newest first: each says how its mutations become those of the
   * version before it in this list (today's, for the first) and how it reads that version's
   * entries, so a step is written once and versions further back go through each step in turn.
   */
  older?: readonly OlderSchema[];
  /**
   * The oldest version whose pulls are answered: pulls of the versions listed after it in `older`
   * get `VersionNotSupported` (`versionType: 'schema'`), so their clients' `onUpdateNeeded` runs
   * (the default reloads the page, onto the new version). Their pushes are still applied, through
   * the upgrades, since the new version's client recovers their pending mutations by pushing them
   * under the old version. Default: every listed version's pulls are answered.
   */
  minimum?: string;
  /** How long a client group counts as active in `inspect`'s counts by schema version, in milliseconds. Default: 7 days. */
  activeMs?: number;
}

/** An older schema version: see {@link SchemaOptions.older}. */
export interface OlderSchema {
  version: string;
  /**
   * How this version's mutations become the next version's, by the name this version sends: a
   * name not listed is sent on as it is. `null`: its mutations are no longer applied; each is
   * recorded as rejected (`inspect`, the change feed, `onError`) and its client moves on.
   */
  mutators?: Readonly<Record<string, MutationUpgrade | null>>;
  /** How this version's clients read the next version's entries. Default: as they are. */
  read?: ReadDowngrade;
  /** From this time (milliseconds since the epoch, or a Date, by the context's `clock`) this version's pulls get `VersionNotSupported`, as under `minimum`. */
  closesAt?: number | Date;
}

/**
 * How one mutation of an older version becomes the next version's: a new name (the same args);
 * `{name?, args?}`, a new name and/or its args mapped (a mapping that throws rejects the
 * mutation); or `{run}`, the mutator kept as it was, run for this version's mutations on today's
 * data in the mutation's transaction.
 */
export type MutationUpgrade =
  | string
  | { name?: string; args?: (args: JSONValue, mutation: { name: string; clientID: string; id: number }) => JSONValue }
  | { run: Mutator };

/**
 * How an older version's clients read the next version's entries, applied to every pull's patch,
 * so an old client's pull costs in proportion to what changed, like any pull.
 *
 * - `keys(key)`: the keys this version holds that today's entry `key` feeds. A function of the key
 *   alone, so a delete maps too; `[]` hides the entry. Default: `[key]`.
 * - `value(oldKey, get)`: what this version holds at `oldKey`, read from the next version's
 *   entries with `get` (from the pull's snapshot); `undefined`: nothing. It may read only keys
 *   whose `keys` include `oldKey`, so that every change it depends on reaches it: a read of
 *   another key throws. Default: `get(oldKey)`.
 */
export interface ReadDowngrade {
  keys?: (key: string) => readonly string[];
  value?: (oldKey: string, get: (key: string) => Promise<JSONValue | undefined>) => JSONValue | undefined | Promise<JSONValue | undefined>;
}

/** How a schema version is served. */
export type SchemaAccess = 'current' | 'open' | 'closed' | 'unknown';

/**
 * How `version` is served at `now`: today's; an older one open (pulls and pushes); closed (its
 * pushes still applied, its pulls answered `VersionNotSupported`); unknown (both refused).
 */
export function schemaAccess(schema: SchemaOptions, version: string, now: number): SchemaAccess {
  if (version === schema.current) return 'current';
  const older = schema.older ?? [];
  const at = older.findIndex((each) => each.version === version);
  if (at < 0) return 'unknown';
  // The index in `older` of the oldest version still open: every one after it is closed.
  const floor = schema.minimum === undefined ? Infinity : schema.minimum === schema.current ? -1 : older.findIndex((each) => each.version === schema.minimum);
  const closesAt = older[at]!.closesAt;
  const closed = at > floor || (closesAt !== undefined && now >= +closesAt);
  return closed ? 'closed' : 'open';
}

/** The steps from `version` up to today's, oldest first (empty for today's, undefined for a version not listed). */
export function stepsFrom(schema: SchemaOptions, version: string): readonly OlderSchema[] | undefined {
  if (version === schema.current) return [];
  let byVersion = steps.get(schema);
  if (byVersion === undefined) steps.set(schema, (byVersion = new Map()));
  let found = byVersion.get(version);
  if (found === undefined) {
    const older = schema.older ?? [];
    const at = older.findIndex((each) => each.version === version);
    if (at < 0) return undefined;
    // The same list each time, so what is made from it (a Downgrade) is made once.
    byVersion.set(version, (found = older.slice(0, at + 1).reverse()));
  }
  return found;
}

const steps = new WeakMap<SchemaOptions, Map<string, readonly OlderSchema[]>>();

/** The checks `createContext` makes of the `schema` option: what it names and the shape of each step. */
export function checkSchema(schema: unknown, describe: (value: unknown) => string): void {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
    throw new TypeError(`schema must be { current, older?, minimum?, activeMs? }, got ${describe(schema)}`);
  const s = schema as Record<string, unknown>;
  for (const field of Object.keys(s))
    if (!['current', 'older', 'minimum', 'activeMs'].includes(field))
      throw new TypeError(`schema.${field} is not an option; the options are current, older, minimum and activeMs`);
  if (typeof s.current !== 'string') throw new TypeError(`schema.current must be today's schemaVersion, a string, got ${describe(s.current)}`);
  if (s.activeMs !== undefined && !(typeof s.activeMs === 'number' && s.activeMs > 0))
    throw new TypeError(`schema.activeMs must be a number of milliseconds above 0, got ${describe(s.activeMs)}`);
  if (s.older !== undefined && !Array.isArray(s.older))
    throw new TypeError(`schema.older must be a list of older versions, newest first, got ${describe(s.older)}`);
  const seen = new Set([s.current]);
  for (const [i, step] of ((s.older ?? []) as unknown[]).entries()) checkStep(step, `schema.older[${i}]`, seen, describe);
  if (s.minimum !== undefined && !seen.has(s.minimum as string))
    throw new TypeError(`schema.minimum must name schema.current or a version in schema.older, got ${describe(s.minimum)}`);
}

function checkStep(step: unknown, path: string, seen: Set<unknown>, describe: (value: unknown) => string): void {
  if (typeof step !== 'object' || step === null || Array.isArray(step))
    throw new TypeError(`${path} must be { version, mutators?, read?, closesAt? }, got ${describe(step)}`);
  const o = step as Record<string, unknown>;
  for (const field of Object.keys(o))
    if (!['version', 'mutators', 'read', 'closesAt'].includes(field))
      throw new TypeError(`${path}.${field} is not an option; the options are version, mutators, read and closesAt`);
  if (typeof o.version !== 'string') throw new TypeError(`${path}.version must be a string, got ${describe(o.version)}`);
  if (seen.has(o.version)) throw new TypeError(`${path}.version ${JSON.stringify(o.version)} is listed twice (schema.current or another of schema.older)`);
  seen.add(o.version);
  if (o.closesAt !== undefined && !(o.closesAt instanceof Date ? !Number.isNaN(+o.closesAt) : typeof o.closesAt === 'number' && Number.isFinite(o.closesAt))) {
    throw new TypeError(`${path}.closesAt must be a time (a Date, or milliseconds since the epoch), got ${describe(o.closesAt)}`);
  }
  if (o.mutators !== undefined) {
    if (typeof o.mutators !== 'object' || o.mutators === null || Array.isArray(o.mutators))
      throw new TypeError(`${path}.mutators must be an object of upgrades by mutator name, got ${describe(o.mutators)}`);
    for (const [name, upgrade] of Object.entries(o.mutators)) checkUpgrade(upgrade, `${path}.mutators.${name}`, describe);
  }
  if (o.read !== undefined) {
    const read = o.read as Record<string, unknown>;
    if (typeof read !== 'object' || read === null || Array.isArray(read))
      throw new TypeError(`${path}.read must be { keys?, value? }, got ${describe(o.read)}`);
    for (const field of Object.keys(read))
      if (!['keys', 'value'].includes(field)) throw new TypeError(`${path}.read.${field} is not an option; the options are keys and value`);
    for (const field of ['keys', 'value'] as const)
      if (read[field] !== undefined && typeof read[field] !== 'function')
        throw new TypeError(`${path}.read.${field} must be a function, got ${describe(read[field])}`);
  }
}

function checkUpgrade(upgrade: unknown, path: string, describe: (value: unknown) => string): void {
  if (upgrade === null || typeof upgrade === 'string') return;
  const wrong = () => new TypeError(`${path} must be a mutator name, { name?, args? }, { run } or null, got ${describe(upgrade)}`);
  if (typeof upgrade !== 'object' || Array.isArray(upgrade)) throw wrong();
  const o = upgrade as Record<string, unknown>;
  const fields = Object.keys(o);
  if ('run' in o) {
    if (fields.length !== 1 || typeof o.run !== 'function') throw wrong();
    return;
  }
  if (fields.some((field) => field !== 'name' && field !== 'args')) throw wrong();
  if (o.name !== undefined && typeof o.name !== 'string') throw wrong();
  if (o.args !== undefined && typeof o.args !== 'function') throw wrong();
}
