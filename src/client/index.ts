export { connectPokes, type PokeConnection, type PokeConnectionOptions, type PokeTarget } from './pokes.js';
