export { emit } from '../base/emit.js';
export { connectPokes, type PokeConnection, type PokeConnectionOptions, PokeStreamError, type PokeTarget } from './pokes.js';
