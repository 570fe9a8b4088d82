import type { JSONValue } from '../../protocol/json.js';
import type { PatchOperation } from '../../protocol/pull-response.js';
import type { Patch } from '../version/patch.js';
import type { OlderSchema } from './schema-options.js';
import { TemporaryError } from '../../base/errors.js';
import { within } from '../../base/within.js';

/** Reads today's entries, from the snapshot a patch was computed in: `undefined` where there is none. */
export type ReadToday = (keys: readonly string[]) => Promise<Array<JSONValue | undefined>>;

/** A `read.value` that read a key its `read.keys` does not map to the key it was computing: an app bug, a 500. */
export class DowngradeError extends TypeError {
  override name = 'DowngradeError';
}

/**
 * How clients of an older schema version read today's entries: the reads of the steps from
 * today's version down to theirs, composed (see `ReadDowngrade`), applied to each patch. A patch
 * names the keys that changed; their old keys are found through `keys`, and each is computed
 * again from today's entries by `value`, so an old client's patch costs what changed, and a
 * delete maps as a put does.
 */
export class Downgrade {
  /** The steps' reads, today's first. */
  readonly #reads: ReadonlyArray<Required<NonNullable<OlderSchema['read']>> & { version: string }>;

  /** `steps` from the version down to today's, oldest first (as `stepsFrom` gives them). */
  /** How long mapping one patch may take (`limits.appCodeMs`): the app's `read.value` runs while the pull holds its snapshot. */
  readonly #timeoutMs: number;

  constructor(steps: readonly OlderSchema[], timeoutMs = Infinity) {
    this.#reads = [...steps]
      .reverse()
      .map(({ version, read }) => ({ version, keys: read?.keys ?? ((key) => [key]), value: read?.value ?? ((key, get) => get(key)) }));
    this.#timeoutMs = timeoutMs;
  }

  /** The old version's keys that today's `key` feeds, through every step. */
  keys(key: string, level = this.#reads.length): readonly string[] {
    let keys: readonly string[] = [key];
    for (let step = 0; step < level; step++) keys = keys.flatMap((each) => this.#checkedKeys(step, each));
    return keys;
  }

  /**
   * `patch` (of today's entries) as the old version's clients hold it: a `clear` stays first; each
   * old key a changed entry feeds is put with its value now, or deleted when it has none.
   * `today` reads entries the patch does not carry; `covers` is the pull's view (an entry outside
   * it reads as none).
   */
  patch(patch: Patch, today: ReadToday, covers?: (key: string) => boolean): Promise<PatchOperation[]> {
    const mapped = this.#reads.length === 1 ? this.#patchOneStep(patch, today, covers) : this.#patchSteps(patch, today, covers);
    if (this.#timeoutMs === Infinity) return mapped;
    const version = this.#reads.at(-1)!.version;
    return within(
      mapped,
      this.#timeoutMs,
      () =>
        new TemporaryError(
          `schema version ${JSON.stringify(version)}: mapping a patch to its shape (read.keys, read.value) ran longer than ${this.#timeoutMs} ms (limits.appCodeMs)`,
          { retryAfterSeconds: 1 },
        ),
    );
  }

  /** {@link patch} through every step, for a version two or more back. */
  async #patchSteps(patch: Patch, today: ReadToday, covers: ((key: string) => boolean) | undefined): Promise<PatchOperation[]> {
    const { cleared, ops, affected } = this.#scan(patch, (key) => this.keys(key));
    const known = new Map<string, JSONValue | undefined>();
    const memo: Array<Map<string, Promise<JSONValue | undefined>>> = this.#reads.map(() => new Map());
    const readToday = async (key: string): Promise<JSONValue | undefined> => {
      if (known.has(key)) return known.get(key);
      const op = ops.get(key);
      const value = op !== undefined ? valueIn(op) : covers !== undefined && !covers(key) ? undefined : (await today([key]))[0];
      known.set(key, value);
      return value;
    };
    // The value at `key` of the version `level` steps down from today's.
    const valueAt = (level: number, key: string): Promise<JSONValue | undefined> => {
      if (level === 0) return readToday(key);
      let pending = memo[level - 1]!.get(key);
      if (pending === undefined) {
        const step = this.#reads[level - 1]!;
        const get = (read: string) => {
          if (typeof read !== 'string')
            return Promise.reject(new DowngradeError(`schema version ${JSON.stringify(step.version)}: read.value's get takes a key, got ${typeof read}`));
          if (!this.#checkedKeys(level - 1, read).includes(key)) return Promise.reject(this.#unmapped(step.version, key, read));
          return valueAt(level - 1, read);
        };
        pending = (async () => step.value(key, get))();
        memo[level - 1]!.set(key, pending);
      }
      return pending;
    };
    const out: PatchOperation[] = cleared ? [{ op: 'clear' }] : [];
    const top = this.#reads.length;
    for (const key of affected) {
      const value = await valueAt(top, key);
      if (value !== undefined) out.push({ op: 'put', key, value });
      else if (!cleared) out.push({ op: 'del', key });
    }
    return out;
  }

  /**
   * {@link patch} for a version one step back, the common case, kept close to the cost of the
   * patch itself (bench/schema-pull.ts): no memo of promises per key, the patch's values parsed
   * only when read, the old keys' values computed together rather than one after another, and
   * the entries the patch does not carry read in one batch (one round trip on a database).
   */
  async #patchOneStep(patch: Patch, today: ReadToday, covers: ((key: string) => boolean) | undefined): Promise<PatchOperation[]> {
    const step = this.#reads[0]!;
    // Today's entries the patch carries (parsed when first read), the old keys each feeds, and
    // the values read so far.
    const { cleared, ops, feeds, affected } = this.#scan(patch, (key) => this.#checkedKeys(0, key));
    const values = new Map<string, JSONValue | undefined>();
    const valueAfter = (key: string, op: Patch[number]): JSONValue | undefined => {
      const value = valueIn(op);
      values.set(key, value);
      return value;
    };
    const reads = new Batch(today);
    const out: PatchOperation[] = cleared ? [{ op: 'clear' }] : [];
    const keys = [...affected];
    const computed: Array<JSONValue | undefined | Promise<JSONValue | undefined>> = keys.map((key) =>
      step.value(key, (read) => {
        if (typeof read !== 'string')
          return Promise.reject(new DowngradeError(`schema version ${JSON.stringify(step.version)}: read.value's get takes a key, got ${typeof read}`));
        if (!(feeds.get(read) ?? this.#checkedKeys(0, read)).includes(key)) return Promise.reject(this.#unmapped(step.version, key, read));
        if (values.has(read)) return Promise.resolve(values.get(read));
        const op = ops.get(read);
        if (op !== undefined) return Promise.resolve(valueAfter(read, op));
        if (covers !== undefined && !covers(read)) return Promise.resolve(undefined);
        return reads.get(read).then((value) => (values.set(read, value), value));
      }),
    );
    reads.flush();
    // A value that is no promise (a read that needs no `get`) costs no turn.
    const settled = computed.some(isThenable) ? await Promise.all(computed) : (computed as Array<JSONValue | undefined>);
    for (const [i, key] of keys.entries()) {
      const value = settled[i];
      if (value !== undefined) out.push({ op: 'put', key, value });
      else if (!cleared) out.push({ op: 'del', key });
    }
    return out;
  }

  /** What `patch` names: whether it starts over (`clear`), its operations by key, and the old keys each feeds (`keysOf`), all of them in order. */
  #scan(
    patch: Patch,
    keysOf: (key: string) => readonly string[],
  ): { cleared: boolean; ops: Map<string, Patch[number]>; feeds: Map<string, readonly string[]>; affected: Set<string> } {
    const ops = new Map<string, Patch[number]>();
    const feeds = new Map<string, readonly string[]>();
    const affected = new Set<string>();
    let cleared = false;
    for (const op of patch) {
      if (op.op === 'clear') {
        cleared = true;
        affected.clear();
        continue;
      }
      ops.set(op.key, op);
      const olds = keysOf(op.key);
      feeds.set(op.key, olds);
      for (const old of olds) affected.add(old);
    }
    return { cleared, ops, feeds, affected };
  }

  #unmapped(version: string, key: string, read: string): DowngradeError {
    return new DowngradeError(
      `schema version ${JSON.stringify(version)}: read.value for ${JSON.stringify(key)} read ${JSON.stringify(read)}, whose read.keys do not include it, so its changes would never reach that key; make read.keys(${JSON.stringify(read)}) return it`,
    );
  }

  /** The step's `keys` of `key`, checked: a list of strings. */
  #checkedKeys(step: number, key: string): readonly string[] {
    const read = this.#reads[step]!;
    const keys = read.keys(key);
    if (!Array.isArray(keys) || keys.some((each) => typeof each !== 'string'))
      throw new DowngradeError(`schema version ${JSON.stringify(read.version)}: read.keys(${JSON.stringify(key)}) must return a list of keys`);
    return keys;
  }
}

/**
 * Reads of today's entries asked for together, made in one call (on a database, one round trip):
 * those asked before {@link flush}, then those asked in the same turn as each other.
 */
class Batch {
  readonly #read: ReadToday;
  #waiting = new Map<string, Array<(value: JSONValue | undefined) => void>>();
  #failed: Array<(error: unknown) => void> = [];
  #scheduled = false;

  constructor(read: ReadToday) {
    this.#read = read;
  }

  get(key: string): Promise<JSONValue | undefined> {
    return new Promise((resolve, reject) => {
      const waiting = this.#waiting.get(key);
      if (waiting === undefined) this.#waiting.set(key, [resolve]);
      else waiting.push(resolve);
      this.#failed.push(reject);
      if (!this.#scheduled) {
        this.#scheduled = true;
        queueMicrotask(() => this.flush());
      }
    });
  }

  /** Reads what was asked for so far, if anything. */
  flush(): void {
    this.#scheduled = false;
    if (this.#waiting.size === 0) return;
    const waiting = this.#waiting;
    const failed = this.#failed;
    this.#waiting = new Map();
    this.#failed = [];
    const keys = [...waiting.keys()];
    this.#read(keys).then(
      (values) => keys.forEach((key, i) => void waiting.get(key)!.forEach((resolve) => void resolve(values[i]))),
      (error: unknown) => failed.forEach((reject) => void reject(error)),
    );
  }
}

/** The downgrades of each older version, made once per context. */
const made = new WeakMap<readonly OlderSchema[], Map<number, Downgrade>>();

/** The {@link Downgrade} of the version whose steps are `steps`, each patch mapped within `timeoutMs`; undefined when no step changes how entries read. */
export function downgradeOf(steps: readonly OlderSchema[], timeoutMs = Infinity): Downgrade | undefined {
  if (steps.every((step) => step.read === undefined)) return undefined;
  let byTimeout = made.get(steps);
  if (byTimeout === undefined) made.set(steps, (byTimeout = new Map()));
  let downgrade = byTimeout.get(timeoutMs);
  if (downgrade === undefined) byTimeout.set(timeoutMs, (downgrade = new Downgrade(steps, timeoutMs)));
  return downgrade;
}

/** The value a patch's operation gives its key: a put's (parsed from its text, when it holds text), none for a delete. */
function valueIn(op: Patch[number]): JSONValue | undefined {
  return op.op === 'put' ? ('text' in op ? (JSON.parse(op.text) as JSONValue) : op.value) : undefined;
}

function isThenable(value: unknown): boolean {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
