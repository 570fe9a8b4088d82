/**
 * The outbox's door, shared by client and server so that one mutator source runs on both: the
 * server's mutation transaction answers to {@link EMIT}; the client's has no such method, and
 * there `emit` does nothing (the server's run of the same mutation is the one that counts).
 */

/** The method a server transaction that can emit answers to. */
export const EMIT = Symbol.for('viewsync.emit');

/**
 * Emits an event, `topic` and a JSON `payload`, from a mutator: on the server it is committed
 * with the mutation's writes, into the space's change feed (and so to its webhooks), exactly
 * once, and never for a mutation that failed, was refused or was sent again. In the client's
 * transaction it does nothing, so a mutator shared by client and server calls it as it is. The
 * server's feed must be on (the context option `changes`); without it, the mutation fails
 * with an error saying so. A topic is a string of 1 to 256 characters; the payload is held to
 * `limits.valueBytes`.
 *
 * @example
 * const assign = async (tx: WriteTransaction, { id, to }: { id: string; to: string }) => {
 *   await tx.set(`todo/${id}/assignee`, to);
 *   await emit(tx, 'todo.assigned', { id, to });
 * };
 */
export function emit(tx: object, topic: string, payload: unknown): Promise<void> {
  const method = (tx as { [EMIT]?: (topic: string, payload: unknown) => Promise<void> })[EMIT];
  return typeof method === 'function' ? method.call(tx, topic, payload) : Promise.resolve();
}
