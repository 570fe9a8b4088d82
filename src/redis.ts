/** `viewsync/redis`: the notifier that carries pokes between instances through Redis pub/sub, where no database connection can `LISTEN`. */
export { redisNotifier, type RedisNotifierClient, type RedisNotifierOptions, type RedisNotifierSubscriber } from './poke/redis-notifier.js';
