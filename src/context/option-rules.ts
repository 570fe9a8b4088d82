import * as v from 'valibot';
import { refusePublishedSecret } from '../base/published-secrets.js';
import { refuseRenamed } from '../base/renamed.js';
import { nearestName } from '../base/nearest-name.js';

/**
 * The words option schemas are written in (options-schema.ts): each rule carries its own message,
 * written with `{where}` for the option's path, which {@link optionError} fills in once the
 * failing issue knows where it is (valibot adds the path as an issue bubbles up, after its
 * message is made).
 */

/** A value of type `T` that `ok` accepts; otherwise "`where` must be `expected`, got …". */
export function must<T>(expected: string, ok: (value: unknown) => boolean) {
  return v.custom<T>(ok, (issue) => `{where} must be ${expected}, got ${describe(issue.input)}`);
}

/** A function of type `T`. */
export function fn<T>(what = 'a function') {
  return must<T>(what, (value) => typeof value === 'function');
}

/** A boolean. */
export const flag = () => must<boolean>('true or false', (value) => typeof value === 'boolean');

/** Milliseconds above 0 (finite: `Infinity` would be for ever without saying so). */
export const duration = () => must<number>('milliseconds above 0', isDuration);

/** A list of strings. */
export const strings = (what = 'a list of strings') =>
  must<readonly string[]>(what, (value) => Array.isArray(value) && value.every((each) => typeof each === 'string'));

/**
 * A secret of 32 characters or more, never a published one. Its message says how long a short
 * one was, or what type a wrong one was, and nothing of its value: an error is logged and shown,
 * and a part of a secret is a head start on guessing it.
 */
export function secret(why: string) {
  return v.pipe(
    v.custom<string>(
      (value) => typeof value === 'string' && value.length >= 32,
      (issue) =>
        `{where} must be a string of 32 characters or more (${why}), got ${typeof issue.input === 'string' ? `one of ${issue.input.length} characters` : typeOf(issue.input)}`,
    ),
    v.rawCheck<string>(({ dataset, addIssue }) => {
      if (!dataset.typed) return;
      try {
        refusePublishedSecret('{where}', dataset.value);
      } catch (error) {
        addIssue({ message: (error as Error).message });
      }
    }),
  );
}

/**
 * An object of the `entries` given, refusing any other key (naming the nearest known one) and
 * the names `renamed` lists (naming the new one): a misspelt option would otherwise silently be
 * its default. The known names are the entries' own, never a list kept beside them.
 */
export function group<TEntries extends v.ObjectEntries>(entries: TEntries, expected: string, renamed: Record<string, string> = {}) {
  const shape = v.object(entries, missing(entries));
  // The keys are checked before the entries: an object schema's output keeps only known keys.
  return v.pipe(
    v.custom<v.InferInput<typeof shape>>(isObject, (issue) => `{where} must be ${expected}, got ${describe(issue.input)}`),
    v.rawCheck<v.InferInput<typeof shape>>(({ dataset, addIssue }) => {
      const input = dataset.value as Record<string, unknown>;
      try {
        refuseRenamed(input, '{where}', renamed);
      } catch (error) {
        addIssue({ message: (error as Error).message });
        return;
      }
      const unknown = unknownKey(input, Object.keys(entries));
      if (unknown !== undefined)
        addIssue({ message: `{where}.${unknown.key} is not an option of {where}${unknown.hint}; the options are ${Object.keys(entries).join(', ')}` });
    }),
    shape,
  );
}

/** The message of a required entry left out: the one its own rule gives for `undefined`. */
export function missing(entries: v.ObjectEntries): (issue: v.ObjectIssue) => string {
  return (issue) => {
    const key = issue.expected === null ? undefined : (JSON.parse(issue.expected) as string);
    const rule = key === undefined ? undefined : entries[key];
    const message = rule && v.safeParse(rule, undefined).issues?.[0]?.message;
    return message ?? `{where} must be given`;
  };
}

/**
 * `schema` for a value that is not `isOther`, and an `isOther` value taken as it is (a function
 * in place of an object, `false` for off); `schema`'s messages keep their place under `{where}`.
 */
export function orElse<TOther, TSchema extends v.GenericSchema>(isOther: (value: unknown) => boolean, schema: TSchema) {
  const either = v.pipe(
    v.custom<TOther | v.InferInput<TSchema>>(() => true),
    v.rawTransform<TOther | v.InferInput<TSchema>, TOther | v.InferOutput<TSchema>>(({ dataset, addIssue, NEVER }) => {
      if (isOther(dataset.value)) return dataset.value as TOther;
      const parsed = v.safeParse(schema, dataset.value, { abortEarly: true });
      if (parsed.success) return parsed.output;
      const issue = parsed.issues[0];
      const path = v.getDotPath(issue);
      addIssue({ message: issue.message.replaceAll('{where}', path ? `{where}.${path}` : '{where}') });
      return NEVER;
    }),
  );
  // Kept for whoever walks the declarations (the test that every option has a default).
  return Object.assign(either, { inner: schema });
}

/** The top level's unknown-key check: as {@link group}'s, worded for `createContext`'s own options. */
export function onlyKeys<T>(known: readonly string[]): v.RawCheckAction<T> {
  return v.rawCheck<T>(({ dataset, addIssue }) => {
    const unknown = unknownKey(dataset.value as Record<string, unknown>, known);
    if (unknown !== undefined) addIssue({ message: `${unknown.key} is not an option${unknown.hint}; the options are ${known.join(', ')}` });
  });
}

/** The TypeError of the first issue of a failed parse, `{where}` filled with the option's path. */
export function optionError(issue: v.BaseIssue<unknown>): TypeError {
  const where = v.getDotPath(issue) ?? '';
  return new TypeError(issue.message.replaceAll('{where}', where));
}

/** What a wrong value was, for a message: a string or number as is, anything else by its kind. */
export function describe(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  if (value === null || typeof value !== 'object') return typeof value === 'string' ? JSON.stringify(value) : String(value);
  return 'an object';
}

/** Whether `value` is a plain object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether `value` is a finite number of milliseconds above 0. */
export function isDuration(value: unknown): boolean {
  return typeof value === 'number' && value > 0 && Number.isFinite(value);
}

/** A whole number from `min` to `max`. */
export function isWhole(value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): boolean {
  return Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max;
}

/** A value's kind only, for a secret's message. */
function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function unknownKey(object: Record<string, unknown>, known: readonly string[]): { key: string; hint: string } | undefined {
  for (const key of Object.keys(object)) {
    if (known.includes(key)) continue;
    const near = nearestName(key, known);
    return { key, hint: near ? ` (did you mean ${near}?)` : '' };
  }
  return undefined;
}
