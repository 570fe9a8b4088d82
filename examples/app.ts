/**
 * The example app every runtime example serves: three mutators, declared with valibot schemas
 * so that bad args are refused before they run. Register mutators of the same names on the
 * client (`new Replicache({ mutators })`).
 */
import * as v from 'valibot';
import { defineMutator, type JSONValue } from 'viewsync';

export const mutators = {
  put: defineMutator(v.object({ key: v.string(), value: v.custom<JSONValue>(() => true) }), (tx, { key, value }) => tx.set(key, value)),
  del: defineMutator(v.object({ key: v.string() }), async (tx, { key }) => void (await tx.del(key))),
  increment: defineMutator(v.object({ key: v.string(), delta: v.number() }), async (tx, { key, delta }) => {
    await tx.set(key, (((await tx.get(key)) as number | undefined) ?? 0) + delta);
  }),
};
