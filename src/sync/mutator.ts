import * as v from 'valibot';
import type { JSONValue } from '../protocol/json.js';
import type { WriteTransaction } from './transaction.js';

/**
 * A mutator: the server's version of a function the client registered under the same name.
 * Its `tx` may be typed with viewsync's {@link WriteTransaction} (which has `userID`) or with the
 * client's own `WriteTransaction`, so the client's mutator source runs here unchanged; what it
 * returns is ignored. It must have no effects outside `tx`: a store may retry a transaction,
 * running it again, and it must not wait on the outside world (see `limits.mutatorMs`).
 */
export type Mutator = {
  // Method syntax makes the parameters bivariant, so a mutator may declare the args it expects
  // (`(tx, args: {key: string}) => ...`) and either transaction type, as the client's mutators do.
  run(tx: WriteTransaction, args: JSONValue | undefined): unknown;
}['run'];

/** Mutators by name, as in the client's `mutators` option. */
export type Mutators = Readonly<Record<string, Mutator>>;

/**
 * Declares a mutator whose args must match a valibot schema. Args that do not match are a
 * permanent error before `run` is called: the mutation is skipped and its client moves on.
 *
 * @example
 * const increment = defineMutator(v.object({ key: v.string(), delta: v.number() }), async (tx, { key, delta }) => {
 *   await tx.set(key, (((await tx.get(key)) as number | undefined) ?? 0) + delta);
 * });
 */
export function defineMutator<TSchema extends v.GenericSchema<unknown, unknown>>(
  schema: TSchema,
  run: (tx: WriteTransaction, args: v.InferOutput<TSchema>) => unknown,
): Mutator {
  return (tx, args) => {
    const result = v.safeParse(schema, args, { abortEarly: true });
    if (!result.success) throw new InvalidArgsError(v.summarize(result.issues));
    return run(tx, result.output);
  };
}

/** Thrown when a mutation's args do not match its mutator's schema. */
export class InvalidArgsError extends Error {
  override name = 'InvalidArgsError';
}
