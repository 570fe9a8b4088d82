import * as v from 'valibot';
import type { JSONValue } from '../../protocol/json.js';
import type { WriteTransaction } from './transaction.js';

/**
 * A mutator: the server's version of a function the client registered under the same name.
 * Its `tx` may be typed with viewsync's {@link WriteTransaction} (which has `userID`) or with the
 * client's own `WriteTransaction`, so the client's mutator source runs here unchanged; what it
 * returns is ignored. It must have no effects outside `tx`: a store may retry a transaction,
 * running it again, and it must not wait on the outside world (see `limits.appCodeMs`).
 */
export type Mutator = {
  // Method syntax makes the parameters bivariant, so a mutator may declare the args it expects
  // (`(tx, args: {key: string}) => ...`) and either transaction type, as the client's mutators do.
  run(tx: WriteTransaction, args: JSONValue | undefined): unknown;
}['run'];

/** Mutators by name, as in the client's `mutators` option. */
export type Mutators = Readonly<Record<string, Mutator>>;

/**
 * Declares a mutator whose args must match a schema: any [Standard Schema](https://standardschema.dev)
 * (valibot, zod 3.24 and later, arktype, ...), its output typed as `run`'s args. Args that do not
 * match are a permanent error ({@link InvalidArgsError}) before `run` is called: the mutation is
 * skipped and its client moves on. A valibot schema stops at its first issue, so a hostile body's
 * thousand bad fields cost one; other libraries check the whole value (which `limits.bodyBytes`
 * bounds).
 *
 * @example
 * const increment = defineMutator(v.object({ key: v.string(), delta: v.number() }), async (tx, { key, delta }) => {
 *   await tx.set(key, (((await tx.get(key)) as number | undefined) ?? 0) + delta);
 * });
 */
export function defineMutator<TSchema extends StandardSchemaV1>(
  schema: TSchema,
  run: (tx: WriteTransaction, args: StandardSchemaV1.InferOutput<TSchema>) => unknown,
): Mutator {
  const standard = schema['~standard'];
  if (standard?.version !== 1 || typeof standard.validate !== 'function') {
    throw new TypeError('defineMutator takes a Standard Schema (valibot, zod 3.24+, arktype, ...): its schema has no ~standard.validate');
  }
  if (standard.vendor === 'valibot') {
    // biome-ignore lint/plugin/no-double-cast: the Standard Schema says its vendor is valibot, so it is a valibot schema.
    const valibot = schema as unknown as v.GenericSchema;
    return (tx, args) => {
      const result = v.safeParse(valibot, args, { abortEarly: true });
      if (!result.success) throw new InvalidArgsError(v.summarize(result.issues));
      return run(tx, result.output as StandardSchemaV1.InferOutput<TSchema>);
    };
  }
  return async (tx, args) => {
    const result = await standard.validate(args);
    if (result.issues !== undefined) throw new InvalidArgsError(summarize(result.issues));
    return run(tx, result.value as StandardSchemaV1.InferOutput<TSchema>);
  };
}

/**
 * The Standard Schema interface, version 1: what {@link defineMutator} takes. Copied in as the
 * spec asks of libraries that accept schemas, so that no package is needed for its types.
 */
export interface StandardSchemaV1<TInput = unknown, TOutput = TInput> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardSchemaV1.Result<TOutput> | Promise<StandardSchemaV1.Result<TOutput>>;
    readonly types?: { readonly input: TInput; readonly output: TOutput } | undefined;
  };
}

export declare namespace StandardSchemaV1 {
  /** What `validate` returns: the value, or the issues. */
  type Result<TOutput> = { readonly value: TOutput; readonly issues?: undefined } | { readonly issues: ReadonlyArray<Issue> };
  /** One problem, and where in the value it is. */
  interface Issue {
    readonly message: string;
    readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
  }
  /** The type a schema's `validate` gives. */
  type InferOutput<TSchema extends StandardSchemaV1> = NonNullable<TSchema['~standard']['types']>['output'];
}

/** The first issue, with its path, as valibot's `summarize` writes one. */
function summarize(issues: ReadonlyArray<StandardSchemaV1.Issue>): string {
  const [first] = issues;
  if (first === undefined) return 'The args do not match the schema';
  const path = (first.path ?? []).map((segment) => String(typeof segment === 'object' ? segment.key : segment)).join('.');
  return `× ${first.message}${path ? `\n  → at ${path}` : ''}`;
}

/** Thrown when a mutation's args do not match its mutator's schema. */
export class InvalidArgsError extends Error {
  override name = 'InvalidArgsError';
}
