import type { JSONValue } from '../../protocol/json.js';
import type { Mutation } from '../../protocol/push-request.js';
import { mutatorNamed } from '../transactions/app-code.js';
import type { Mutator, Mutators } from '../transactions/mutator.js';
import type { OlderSchema } from './schema-options.js';

/** A mutation of an older schema version that cannot become one of today's: rejected, and recorded (rejected.ts). */
export class MutationUpgradeError extends Error {
  override name = 'MutationUpgradeError';
}

/**
 * What runs `mutation` of an older version today, and on which args: its upgrade through each
 * step from its version to today's (`steps`, oldest first), in turn. A step that names no upgrade
 * for the mutation's name sends it on as it is; `{run}` stops there and runs the kept mutator.
 * Throws a {@link MutationUpgradeError} when a step refuses it (`null`) or its mapping throws, and
 * an `UnknownMutatorError` when today's mutators have no mutator of the name it came to.
 */
export function upgradeMutation(steps: readonly OlderSchema[], mutators: Mutators, mutation: Mutation): { mutator: Mutator; args: JSONValue | undefined } {
  let { name } = mutation;
  let args: JSONValue | undefined = mutation.args;
  for (const step of steps) {
    const upgrade = step.mutators !== undefined && Object.hasOwn(step.mutators, name) ? step.mutators[name] : undefined;
    if (upgrade === undefined) continue;
    if (upgrade === null)
      throw new MutationUpgradeError(`Schema version ${JSON.stringify(step.version)} no longer applies ${JSON.stringify(name)} (its upgrade is null)`);
    if (typeof upgrade === 'string') {
      name = upgrade;
      continue;
    }
    if ('run' in upgrade) return { mutator: upgrade.run, args };
    if (upgrade.args !== undefined) {
      try {
        args = upgrade.args(args ?? null, { name, clientID: mutation.clientID, id: mutation.id });
      } catch (error) {
        throw new MutationUpgradeError(
          `The upgrade of ${JSON.stringify(name)} from schema version ${JSON.stringify(step.version)} threw: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      }
      if (args === undefined)
        throw new MutationUpgradeError(
          `The upgrade of ${JSON.stringify(name)} from schema version ${JSON.stringify(step.version)} returned undefined, not the next version's args`,
        );
    }
    name = upgrade.name ?? name;
  }
  return { mutator: mutatorNamed(mutators, name), args };
}
