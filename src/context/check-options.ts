import { checkIndexes } from '../sync/version/indexes.js';
import { refusePublishedSecret } from '../base/published-secrets.js';
import { refuseRenamed } from '../base/renamed.js';
import { DEFAULT_LIMITS } from '../sync/transactions/limits.js';
import { checkSchema } from '../sync/schema/schema-options.js';
import { checkOrder } from '../sync/first-sync-order.js';

/**
 * The checks `createContext` makes of every option, once, at startup: a typo, a wrong type, a
 * duration in the wrong unit or a secret copied from the docs throws a TypeError naming the field
 * and what it expected, rather than being taken as is (a misspelt limit or rate would silently be
 * the default, or none; the docs' secret would open the change feed to anyone who read them).
 * Rates are checked where their buckets are made (rates.ts); a quota function's answers, which
 * only exist per space, where they are used (sync/transactions/quota.ts).
 */
export function checkOptions(options: unknown): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new TypeError(`createContext: the options must be an object, got ${describe(options)}`);
  const o = options as Record<string, unknown>;
  only(o, 'createContext options', TOP_LEVEL);
  const storage = o.storage as { transaction?: unknown } | undefined;
  if (typeof storage !== 'object' || storage === null || typeof storage.transaction !== 'function') {
    throw new TypeError(`storage must be a store (memoryStorage(), sqliteStorage(db), postgresStorage(sql), …), got ${describe(o.storage)}`);
  }
  // A pull waits this long at most: past a minute (or Infinity), a client would wait for ever.
  optional(storage as Record<string, unknown>, 'catchUpMs', 'a number of milliseconds from 0 to 60,000', (value) => typeof value === 'number' && value >= 0 && value <= 60_000, 'storage.');
  if (typeof o.mutators !== 'object' || o.mutators === null || Array.isArray(o.mutators)) throw new TypeError(`mutators must be an object of mutator functions by name, got ${describe(o.mutators)}`);
  for (const [name, mutator] of Object.entries(o.mutators)) {
    if (typeof mutator !== 'function') throw new TypeError(`mutators.${name} must be a function (tx, args), got ${describe(mutator)}`);
  }
  for (const field of ['authenticate', 'space', 'view', 'onError', 'clock'] as const) optional(o, field, 'a function', (value) => typeof value === 'function');
  for (const field of ['transactionPerMutation', 'shareReads'] as const) optional(o, field, 'true or false', (value) => typeof value === 'boolean');
  optional(o, 'schemaVersion', 'a string, a list of strings or a function', (value) => typeof value === 'string' || typeof value === 'function' || (Array.isArray(value) && value.every((each) => typeof each === 'string')));
  if (o.schema !== undefined) {
    if (o.schemaVersion !== undefined) throw new TypeError('schema and schemaVersion were both given: schema names the versions served (schema.current and schema.older), give it alone');
    checkSchema(o.schema, describe);
  }
  optional(o, 'rates', 'an object (see RateOptions)', isObject);
  checkLimits(o.limits);
  checkQuotas(o.quotas);
  checkRetention(o.retention);
  checkPokes(o.pokes);
  checkFirstSync(o.firstSync, o.pokes, o.limits);
  checkCors(o.cors);
  checkChanges(o.changes);
  checkHistory(o.history);
  checkInspector(o.inspector);
  if (o.indexes !== undefined) checkIndexes(o.indexes);
}

const TOP_LEVEL = ['storage', 'mutators', 'authenticate', 'space', 'view', 'indexes', 'schemaVersion', 'schema', 'limits', 'quotas', 'rates', 'onError', 'transactionPerMutation', 'shareReads', 'pokes', 'retention', 'clock', 'cors', 'changes', 'history', 'firstSync', 'inspector'];

function checkLimits(limits: unknown): void {
  if (limits === undefined) return;
  if (!isObject(limits)) throw new TypeError(`limits must be an object, got ${describe(limits)}`);
  if (Object.hasOwn(limits, 'mutatorMs')) throw new TypeError('limits.mutatorMs was renamed limits.appCodeMs in viewsync 0.2: it bounds views and backend calls too, not only mutators; see the changelog');
  only(limits, 'limits', Object.keys(DEFAULT_LIMITS));
  for (const [field, value] of Object.entries(limits)) {
    if (value !== undefined && !(typeof value === 'number' && Number.isInteger(value) && value > 0)) throw new TypeError(`limits.${field} must be a whole number above 0, got ${describe(value)}`);
  }
}

function checkQuotas(quotas: unknown): void {
  if (quotas === undefined || typeof quotas === 'function') return;
  if (!isObject(quotas)) throw new TypeError(`quotas must be { entries?, bytes?, historyBytes? } or a function of the space, got ${describe(quotas)}`);
  only(quotas, 'quotas', ['entries', 'bytes', 'historyBytes']);
  for (const field of ['entries', 'bytes'] as const) optional(quotas, field, 'a number of at least 0', (value) => typeof value === 'number' && value >= 0, 'quotas.');
  optional(quotas, 'historyBytes', 'a number of at least 0, or false', (value) => value === false || (typeof value === 'number' && value >= 0), 'quotas.');
}

function checkRetention(retention: unknown): void {
  if (retention === undefined) return;
  if (!isObject(retention)) throw new TypeError(`retention must be an object, got ${describe(retention)}`);
  refuseRenamed(retention, 'retention', { clientGroups: 'clientGroupsMs', tombstones: 'tombstonesMs' });
  only(retention, 'retention', ['clientGroupsMs', 'tombstonesMs', 'changesMs', 'historyMs']);
  for (const field of ['clientGroupsMs', 'tombstonesMs', 'changesMs', 'historyMs'] as const) optional(retention, field, 'milliseconds above 0, or false (for ever)', (value) => value === false || isDuration(value), 'retention.');
}

function checkPokes(pokes: unknown): void {
  if (pokes === undefined || pokes === false) return;
  if (!isObject(pokes)) throw new TypeError(`pokes must be an object, or false to serve none, got ${describe(pokes)}`);
  only(pokes, 'pokes', ['notifier', 'heartbeatMs', 'coalesceMs', 'maxStreams', 'maxStreamsPerUser', 'maxStreamAgeMs', 'tokenSecret', 'tokenTtlMs']);
  optional(pokes, 'tokenSecret', 'a string of 32 characters or more (a random secret, the same on every instance)', (value) => typeof value === 'string' && value.length >= 32, 'pokes.');
  refusePublishedSecret('pokes.tokenSecret', pokes.tokenSecret);
  optional(pokes, 'tokenTtlMs', 'milliseconds above 0', isDuration, 'pokes.');
  optional(pokes, 'notifier', 'a notifier (postgresNotifier(sql), redisNotifier(…), storeNotifier(storage))', (value) => isObject(value) && typeof value.subscribe === 'function', 'pokes.');
  for (const field of ['heartbeatMs', 'maxStreamAgeMs'] as const) optional(pokes, field, 'milliseconds above 0', isDuration, 'pokes.');
  optional(pokes, 'coalesceMs', 'milliseconds, 0 or more', (value) => typeof value === 'number' && value >= 0 && Number.isFinite(value), 'pokes.');
  for (const field of ['maxStreams', 'maxStreamsPerUser'] as const) optional(pokes, field, 'a whole number above 0', (value) => typeof value === 'number' && Number.isInteger(value) && value > 0, 'pokes.');
}

function checkFirstSync(firstSync: unknown, pokes: unknown, limits: unknown): void {
  if (firstSync === undefined) return;
  if (!isObject(firstSync)) throw new TypeError(`firstSync must be { pageBytes?, order? }, got ${describe(firstSync)}`);
  only(firstSync, 'firstSync', ['pageBytes', 'order']);
  optional(firstSync, 'pageBytes', 'a whole number of at least 1 MiB (1,048,576)', (value) => Number.isInteger(value) && (value as number) >= 2 ** 20, 'firstSync.');
  // A list is checked now, against the context's limits; a function's answers where they are used (handle-pull.ts).
  const { order } = firstSync;
  if (order !== undefined && typeof order !== 'function') checkOrder(order, 'firstSync.order', { ...DEFAULT_LIMITS, ...(isObject(limits) ? limits : {}) });
  if (pokes === false) throw new TypeError('firstSync needs pokes (pokes: false turns them off): the client pulls each next page when poked');
}

function checkHistory(history: unknown): void {
  if (history === undefined) return;
  if (!isObject(history)) throw new TypeError(`history must be an object ({} keeps every version with the defaults), got ${describe(history)}`);
  only(history, 'history', ['checkpointEvery']);
  optional(history, 'checkpointEvery', 'a whole number of versions of at least 1', (value) => Number.isSafeInteger(value) && (value as number) >= 1, 'history.');
}

function checkInspector(inspector: unknown): void {
  if (inspector === undefined) return;
  if (!isObject(inspector)) throw new TypeError(`inspector must be { secret, readOnly?, onAction? }, got ${describe(inspector)}`);
  only(inspector, 'inspector', ['secret', 'readOnly', 'onAction']);
  if (typeof inspector.secret !== 'string' || inspector.secret.length < 32) throw new TypeError(`inspector.secret must be a string of 32 characters or more (a random secret, for operators only), got ${typeof inspector.secret === 'string' ? `one of ${inspector.secret.length}` : describe(inspector.secret)}`);
  refusePublishedSecret('inspector.secret', inspector.secret);
  optional(inspector, 'readOnly', 'true or false', (value) => typeof value === 'boolean', 'inspector.');
  optional(inspector, 'onAction', 'a function', (value) => typeof value === 'function', 'inspector.');
}

function checkChanges(changes: unknown): void {
  if (changes === undefined) return;
  if (!isObject(changes)) throw new TypeError(`changes must be an object ({} turns the change feed on), got ${describe(changes)}`);
  only(changes, 'changes', ['secret', 'webhooks']);
  optional(changes, 'secret', 'a string of 32 characters or more (a random secret only the backend knows)', (value) => typeof value === 'string' && value.length >= 32, 'changes.');
  refusePublishedSecret('changes.secret', changes.secret);
  if (changes.webhooks === undefined) return;
  if (!isObject(changes.webhooks)) throw new TypeError(`changes.webhooks must be an object of webhooks by name, got ${describe(changes.webhooks)}`);
  for (const [name, hook] of Object.entries(changes.webhooks)) {
    if (!/^[\w.-]{1,64}$/.test(name)) throw new TypeError(`changes.webhooks: a webhook's name is 1 to 64 letters, digits, _, . or -, got ${JSON.stringify(name.slice(0, 80))}`);
    const where = `changes.webhooks.${name}`;
    if (!isObject(hook)) throw new TypeError(`${where} must be { url, secret, … }, got ${describe(hook)}`);
    only(hook, where, ['url', 'secret', 'spaces', 'prefixes', 'topics', 'maxBatch', 'timeoutMs', 'retryForMs', 'allowPrivateAddresses', 'spacesPerDelivery', 'gatherMs']);
    if (typeof hook.url !== 'string' || !URL.canParse(hook.url) || !/^https?:$/.test(new URL(hook.url).protocol)) throw new TypeError(`${where}.url must be an http(s) URL, got ${describe(hook.url)}`);
    if (typeof hook.secret !== 'string' || hook.secret.length < 32) throw new TypeError(`${where}.secret must be a string of 32 characters or more (shared with the receiver only), got ${typeof hook.secret === 'string' ? `one of ${hook.secret.length}` : describe(hook.secret)}`);
    refusePublishedSecret(`${where}.secret`, hook.secret);
    optional(hook, 'spaces', 'a list of spaces or a function of the space', (value) => typeof value === 'function' || (Array.isArray(value) && value.every((each) => typeof each === 'string')), `${where}.`);
    for (const field of ['prefixes', 'topics'] as const) optional(hook, field, 'a list of strings', (value) => Array.isArray(value) && value.every((each) => typeof each === 'string'), `${where}.`);
    optional(hook, 'maxBatch', 'a whole number from 1 to 1,000', (value) => Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 1_000, `${where}.`);
    optional(hook, 'spacesPerDelivery', 'a whole number from 1 to 1,000', (value) => Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 1_000, `${where}.`);
    optional(hook, 'gatherMs', 'a number of milliseconds from 0 to 60,000', (value) => typeof value === 'number' && value >= 0 && value <= 60_000, `${where}.`);
    for (const field of ['timeoutMs', 'retryForMs'] as const) optional(hook, field, 'milliseconds above 0', isDuration, `${where}.`);
    optional(hook, 'allowPrivateAddresses', 'true or false', (value) => typeof value === 'boolean', `${where}.`);
  }
}

function checkCors(cors: unknown): void {
  if (cors === undefined || cors === false) return;
  if (!isObject(cors)) throw new TypeError(`cors must be { origin, maxAgeMs? }, or false for no CORS headers, got ${describe(cors)}`);
  refuseRenamed(cors, 'cors', { maxAge: 'maxAgeMs' });
  only(cors, 'cors', ['origin', 'maxAgeMs']);
  const { origin } = cors;
  if (!(origin === '*' || typeof origin === 'function' || (Array.isArray(origin) && origin.every((each) => typeof each === 'string')))) {
    throw new TypeError(`cors.origin must be '*', a list of origins or a function of the origin, got ${describe(origin)}`);
  }
  optional(cors, 'maxAgeMs', 'milliseconds, 0 or more', (value) => typeof value === 'number' && value >= 0 && Number.isFinite(value), 'cors.');
}

/** Throws unless every own key of `object` is one of `known`, naming the first that is not. */
function only(object: Record<string, unknown>, where: string, known: readonly string[]): void {
  for (const key of Object.keys(object)) {
    if (known.includes(key)) continue;
    const near = nearest(key, known);
    throw new TypeError(`${where === 'createContext options' ? '' : `${where}.`}${key} is not an option${where === 'createContext options' ? '' : ` of ${where}`}${near ? ` (did you mean ${near}?)` : ''}; the options are ${known.join(', ')}`);
  }
}

/** The known name `key` most likely misspells: within two edits, or sharing its first four letters. */
function nearest(key: string, known: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  const scored = known.map((each) => ({ each, distance: editDistance(lower, each.toLowerCase()) })).sort((a, b) => a.distance - b.distance);
  const best = scored[0];
  if (best !== undefined && best.distance <= 2) return best.each;
  return known.find((each) => lower.length >= 4 && each.toLowerCase().startsWith(lower.slice(0, 4)));
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}

function optional(object: Record<string, unknown>, field: string, expected: string, ok: (value: unknown) => boolean, prefix = ''): void {
  const value = object[field];
  if (value !== undefined && !ok(value)) throw new TypeError(`${prefix}${field} must be ${expected}, got ${describe(value)}`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isDuration(value: unknown): boolean {
  return typeof value === 'number' && value > 0 && Number.isFinite(value);
}

function describe(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  if (value === null || typeof value !== 'object') return typeof value === 'string' ? JSON.stringify(value) : String(value);
  return 'an object';
}
