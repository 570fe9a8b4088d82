import type { JSONValue } from '../../protocol/json.js';
import type { PatchOperation } from '../../protocol/pull-response.js';
import type { Patch } from '../version/patch.js';
import type { OlderSchema } from './schema-options.js';

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
  constructor(steps: readonly OlderSchema[]) {
    this.#reads = [...steps].reverse().map(({ version, read }) => ({ version, keys: read?.keys ?? ((key) => [key]), value: read?.value ?? ((key, get) => get(key)) }));
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
  async patch(patch: Patch, today: ReadToday, covers?: (key: string) => boolean): Promise<PatchOperation[]> {
    const known = new Map<string, JSONValue | undefined>();
    const affected = new Set<string>();
    let cleared = false;
    for (const op of patch) {
      if (op.op === 'clear') {
        cleared = true;
        affected.clear();
        continue;
      }
      known.set(op.key, op.op === 'del' ? undefined : 'text' in op ? (JSON.parse(op.text) as JSONValue) : op.value);
      for (const old of this.keys(op.key)) affected.add(old);
    }
    const memo: Array<Map<string, Promise<JSONValue | undefined>>> = this.#reads.map(() => new Map());
    const readToday = async (key: string): Promise<JSONValue | undefined> => {
      if (known.has(key)) return known.get(key);
      if (covers !== undefined && !covers(key)) return undefined;
      const [value] = await today([key]);
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
          if (typeof read !== 'string') return Promise.reject(new DowngradeError(`schema version ${JSON.stringify(step.version)}: read.value's get takes a key, got ${typeof read}`));
          if (!this.#checkedKeys(level - 1, read).includes(key)) {
            return Promise.reject(new DowngradeError(`schema version ${JSON.stringify(step.version)}: read.value for ${JSON.stringify(key)} read ${JSON.stringify(read)}, whose read.keys do not include it, so its changes would never reach that key; make read.keys(${JSON.stringify(read)}) return it`));
          }
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

  /** The step's `keys` of `key`, checked: a list of strings. */
  #checkedKeys(step: number, key: string): readonly string[] {
    const read = this.#reads[step]!;
    const keys = read.keys(key);
    if (!Array.isArray(keys) || keys.some((each) => typeof each !== 'string')) throw new DowngradeError(`schema version ${JSON.stringify(read.version)}: read.keys(${JSON.stringify(key)}) must return a list of keys`);
    return keys;
  }
}

/** The downgrades of each older version, made once per context. */
const made = new WeakMap<readonly OlderSchema[], Downgrade>();

/** The {@link Downgrade} of the version whose steps are `steps`, or undefined when no step changes how entries read. */
export function downgradeOf(steps: readonly OlderSchema[]): Downgrade | undefined {
  if (steps.every((step) => step.read === undefined)) return undefined;
  let downgrade = made.get(steps);
  if (downgrade === undefined) made.set(steps, (downgrade = new Downgrade(steps)));
  return downgrade;
}
