// The data migrations a chaos run applies (run.ts), one after another in each space, by the CLI
// (--module) and by the servers (server.ts): each counts its runs on every entry under `item/`
// in a field of its own name, so that an entry migrated twice shows 2 (migration-check.ts).
export const migrations = Array.from({ length: 40 }, (_, i) => {
  const name = `chaos-${i + 1}`;
  return {
    name,
    prefix: 'item/',
    entry: async (tx, key, value) => {
      await tx.set(key, { ...value, [name]: (value[name] ?? 0) + 1 });
    },
  };
});
