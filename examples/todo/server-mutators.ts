/**
 * The shared mutators as the server registers them: each behind a valibot schema, because the
 * server cannot trust what a client sends. Args that fail are skipped, and the client moves on.
 */
import * as v from 'valibot';
import { defineMutator } from 'viewsync';
import { mutators as shared } from './mutators.js';

const ID = v.pipe(v.string(), v.minLength(1), v.maxLength(64));
// The client trims and ignores empty text too; the server must not rely on it.
const TEXT = v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(1000));

export const mutators = {
  createTodo: defineMutator(v.object({ id: ID, text: TEXT, sort: v.pipe(v.number(), v.finite()) }), shared.createTodo),
  updateTodo: defineMutator(v.object({ id: ID, text: v.optional(TEXT), completed: v.optional(v.boolean()) }), shared.updateTodo),
  deleteTodos: defineMutator(v.object({ ids: v.pipe(v.array(ID), v.maxLength(10_000)) }), shared.deleteTodos),
  setAllCompleted: defineMutator(v.object({ completed: v.boolean() }), shared.setAllCompleted),
};
