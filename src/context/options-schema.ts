import * as v from 'valibot';
import type { Notifier } from '../poke/notifier.js';
import type { PokeOptions } from '../poke/options.js';
import { DEFAULT_MAX_STREAMS } from '../poke/hub.js';
import type { Storage } from '../storage/types.js';
import { DEFAULT_LIMITS, type Limits } from '../sync/transactions/limits.js';
import type { Mutators } from '../sync/transactions/mutator.js';
import type { Quotas } from '../sync/transactions/quota.js';
import type { View } from '../sync/view.js';
import { checkIndexes, type IndexDefinitions } from '../sync/version/indexes.js';
import { checkSchema, type SchemaOptions } from '../sync/schema/schema-options.js';
import { checkOrder, type FirstSyncOrder } from '../sync/first-sync-order.js';
import { CHECKPOINT_EVERY } from '../sync/history/checkpoints.js';
import { type ErrorInfo, logError } from './log.js';
import type { InspectorAction } from './inspector-action.js';
import { describe, duration, flag, fn, group, isObject, isWhole, must, onlyKeys, orElse, secret, strings } from './option-rules.js';

/**
 * Every option `createContext` takes, declared once: its type (checked against the documented
 * interfaces in context.ts, both ways, in create.ts), its check and message, and its default.
 * An option whose absence means "off" (no view, no change feed…) has no default and says so with
 * `off()`; every other optional one has a default here and nowhere else.
 */

/** The default of every duration of `retention` (and the CLI's gc, unless told). */
export const DEFAULT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** What leaving an option out means, for those that have no default value: see the test of every option's default. */
export const ABSENT = new WeakMap<object, string>();

function off<T extends object>(schema: T, meaning: string): T {
  ABSENT.set(schema, meaning);
  return schema;
}

const ms = (expected: string, ok: (value: number) => boolean) => must<number>(expected, (value) => typeof value === 'number' && ok(value));
const whole = (expected: string, min: number, max?: number) => must<number>(expected, (value) => isWhole(value, min, max));

const LIMIT_ENTRIES = Object.fromEntries(
  Object.entries(DEFAULT_LIMITS).map(([field, value]) => [field, v.optional(whole('a whole number above 0', 1), value)]),
) as { [K in keyof Limits]: v.OptionalSchema<ReturnType<typeof whole>, number> };

const LimitsRule = group(LIMIT_ENTRIES, 'an object', { mutatorMs: 'appCodeMs' });

const QuotasRule = orElse<Extract<Quotas, (...args: never) => unknown>, ReturnType<typeof quotaGroup>>((value) => typeof value === 'function', quotaGroup());
function quotaGroup() {
  return group(
    {
      entries: off(v.optional(ms('a number of at least 0', (value) => value >= 0)), 'no bound'),
      bytes: off(v.optional(ms('a number of at least 0', (value) => value >= 0)), 'no bound'),
      historyBytes: off(
        v.optional(must<number | false>('a number of at least 0, or false', (value) => value === false || (typeof value === 'number' && value >= 0))),
        'no bound',
      ),
    },
    '{ entries?, bytes?, historyBytes? } or a function of the space',
  );
}

const rate = () => off(v.optional(ms('a number above 0', (value) => value > 0 && value !== Infinity)), 'no limit');
const RatesRule = group(
  {
    pushesPerSecond: rate(),
    userPushesPerSecond: rate(),
    pullsPerSecond: rate(),
    userPullsPerSecond: rate(),
    burstMs: v.optional(
      ms('a number above 0', (value) => value > 0 && value !== Infinity),
      1_000,
    ),
    bucketsKept: v.optional(
      ms('a number above 0', (value) => value > 0 && value !== Infinity),
      100_000,
    ),
  },
  'an object (see RateOptions)',
);

const keptFor = () =>
  must<number | false>(
    'milliseconds above 0, or false (for ever)',
    (value) => value === false || (typeof value === 'number' && value > 0 && Number.isFinite(value)),
  );
const kept = () => v.optional(keptFor(), DEFAULT_RETENTION_MS);
const RetentionRule = group(
  { clientGroupsMs: kept(), tombstonesMs: kept(), changesMs: kept(), historyMs: off(v.optional(keptFor()), 'as long as changesMs') },
  'an object',
  { clientGroups: 'clientGroupsMs', tombstones: 'tombstonesMs' },
);

const PokesRule = orElse<false, ReturnType<typeof pokeGroup>>((value) => value === false, pokeGroup());
function pokeGroup() {
  return group(
    {
      notifier: off(
        v.optional(
          must<Notifier>(
            'a notifier (postgresNotifier(sql), redisNotifier(…), storeNotifier(storage))',
            (value) => isObject(value) && typeof value.subscribe === 'function',
          ),
        ),
        "the store's notifier, in this process",
      ),
      heartbeatMs: v.optional(duration(), 15_000),
      coalesceMs: v.optional(
        ms('milliseconds, 0 or more', (value) => value >= 0 && Number.isFinite(value)),
        50,
      ),
      maxStreams: off(v.optional(whole('a whole number above 0', 1)), `${DEFAULT_MAX_STREAMS}, or less to fit the process's descriptor limit (PokeHub)`),
      maxStreamsPerUser: v.optional(whole('a whole number above 0', 1), 100),
      maxStreamAgeMs: v.optional(duration(), 600_000),
      tokenSecret: off(v.optional(secret('a random secret, the same on every instance')), 'no poke tokens'),
      tokenTtlMs: v.optional(duration(), 60 * 60 * 1000),
    },
    'an object, or false to serve none',
  );
}

const CorsRule = orElse<false, ReturnType<typeof corsGroup>>((value) => value === false, corsGroup());
function corsGroup() {
  return group(
    {
      origin: must<'*' | readonly string[] | ((origin: string) => boolean)>(
        "'*', a list of origins or a function of the origin",
        (value) => value === '*' || typeof value === 'function' || (Array.isArray(value) && value.every((each) => typeof each === 'string')),
      ),
      maxAgeMs: v.optional(
        ms('milliseconds, 0 or more', (value) => value >= 0 && Number.isFinite(value)),
        86_400_000,
      ),
    },
    '{ origin, maxAgeMs? }, or false for no CORS headers',
    { maxAge: 'maxAgeMs' },
  );
}

const WebhookRule = group(
  {
    url: must<string>('an http(s) URL', (value) => typeof value === 'string' && URL.canParse(value) && /^https?:$/.test(new URL(value).protocol)),
    secret: secret('shared with the receiver only'),
    spaces: off(
      v.optional(
        must<readonly string[] | ((space: string) => boolean)>(
          'a list of spaces or a function of the space',
          (value) => typeof value === 'function' || (Array.isArray(value) && value.every((each) => typeof each === 'string')),
        ),
      ),
      'every space',
    ),
    prefixes: off(v.optional(strings()), 'every key'),
    topics: off(v.optional(strings()), 'every event'),
    maxBatch: v.optional(whole('a whole number from 1 to 1,000', 1, 1_000), 100),
    timeoutMs: v.optional(duration(), 15_000),
    retryForMs: v.optional(duration(), 3 * 24 * 60 * 60 * 1000),
    allowPrivateAddresses: v.optional(flag(), false),
    spacesPerDelivery: v.optional(whole('a whole number from 1 to 1,000', 1, 1_000), 1),
    gatherMs: v.optional(
      ms('a number of milliseconds from 0 to 60,000', (value) => value >= 0 && value <= 60_000),
      100,
    ),
  },
  '{ url, secret, … }',
);

const ChangesRule = group(
  {
    secret: off(v.optional(secret('a random secret only the backend knows')), 'no `GET …/changes` (404)'),
    webhooks: off(
      v.optional(
        v.record(
          v.custom<string>(
            (name) => typeof name === 'string' && /^[\w.-]{1,64}$/.test(name),
            (issue) => `changes.webhooks: a webhook's name is 1 to 64 letters, digits, _, . or -, got ${JSON.stringify(String(issue.input).slice(0, 80))}`,
          ),
          WebhookRule,
          (issue) => `{where} must be an object of webhooks by name, got ${describe(issue.input)}`,
        ),
      ),
      'no webhooks',
    ),
  },
  'an object ({} turns the change feed on)',
);

const HistoryRule = group(
  { checkpointEvery: v.optional(whole('a whole number of versions of at least 1', 1), CHECKPOINT_EVERY) },
  'an object ({} keeps every version with the defaults)',
);

const FirstSyncRule = group(
  {
    pageBytes: v.optional(whole('a whole number of at least 1 MiB (1,048,576)', 2 ** 20), 4 * 1024 * 1024),
    // Anything but a function is checked as a list against the context's limits, at the top level; a function's answers where they are used (handle-pull.ts).
    order: off(v.optional(v.custom<FirstSyncOrder>(() => true)), 'key order'),
  },
  '{ pageBytes?, order? }',
);

const InspectorRule = group(
  {
    secret: secret('a random secret, for operators only'),
    readOnly: v.optional(flag(), false),
    onAction: off(v.optional(fn<(action: InspectorAction) => void>()), 'a line on `console.info`'),
  },
  '{ secret, readOnly?, onAction? }',
);

const StorageRule = v.pipe(
  must<Storage>('a store (memoryStorage(), sqliteStorage(db), postgresStorage(sql), …)', (value) => isObject(value) && typeof value.transaction === 'function'),
  // A pull waits this long at most: past a minute (or Infinity), a client would wait for ever.
  v.rawCheck<Storage>(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const { catchUpMs } = dataset.value;
    if (catchUpMs !== undefined && !(typeof catchUpMs === 'number' && catchUpMs >= 0 && catchUpMs <= 60_000))
      addIssue({ message: `{where}.catchUpMs must be a number of milliseconds from 0 to 60,000, got ${describe(catchUpMs)}` });
  }),
);

const MutatorsRule = v.pipe(
  must<Mutators>('an object of mutator functions by name', isObject),
  v.rawCheck<Mutators>(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    for (const [name, mutator] of Object.entries(dataset.value)) {
      if (typeof mutator !== 'function') return addIssue({ message: `{where}.${name} must be a function (tx, args), got ${describe(mutator)}` });
    }
  }),
);

/** A rule that defers to a check written beside what it checks (it throws its own error). */
const checkedBy = <T>(check: (value: unknown) => void) =>
  v.custom<T>((value) => {
    check(value);
    return true;
  });

const ENTRIES = {
  storage: StorageRule,
  mutators: MutatorsRule,
  authenticate: off(v.optional(fn<(request: Request) => string | null | Promise<string | null>>()), 'every request anonymous'),
  space: off(v.optional(fn<(request: Request, userID: string | undefined) => string | Promise<string>>()), "one space, ''"),
  view: off(v.optional(fn<View>()), 'the whole space'),
  indexes: off(v.optional(checkedBy<IndexDefinitions>(checkIndexes)), 'none'),
  schemaVersion: off(
    v.optional(
      must<string | readonly string[] | ((schemaVersion: string) => boolean)>(
        'a string, a list of strings or a function',
        (value) => typeof value === 'string' || typeof value === 'function' || (Array.isArray(value) && value.every((each) => typeof each === 'string')),
      ),
    ),
    'every schema version',
  ),
  schema: off(v.optional(checkedBy<SchemaOptions>((value) => checkSchema(value, describe))), 'every schema version'),
  limits: v.optional(LimitsRule, {}),
  quotas: off(v.optional(QuotasRule), 'none'),
  rates: off(v.optional(RatesRule), 'no limit'),
  onError: v.optional(fn<(error: unknown, info: ErrorInfo) => void>(), () => logError),
  transactionPerMutation: v.optional(flag(), false),
  shareReads: v.optional(flag(), true),
  pokes: v.optional(PokesRule, {}),
  retention: v.optional(RetentionRule, {}),
  clock: v.optional(fn<() => number>(), () => Date.now),
  cors: v.optional(CorsRule, { origin: '*' }),
  changes: off(v.optional(ChangesRule), 'no change feed'),
  history: off(v.optional(HistoryRule), 'no checkpoints'),
  firstSync: off(v.optional(FirstSyncRule), 'a first pull in one answer'),
  inspector: off(v.optional(InspectorRule), 'no inspector (404)'),
};

/** `createContext`'s options: the checks, messages and defaults of every one. */
export const SyncOptionsSchema = v.pipe(
  v.custom<v.InferInput<v.ObjectSchema<typeof ENTRIES, undefined>>>(
    isObject,
    (issue) => `createContext: the options must be an object, got ${describe(issue.input)}`,
  ),
  onlyKeys<v.InferInput<v.ObjectSchema<typeof ENTRIES, undefined>>>(Object.keys(ENTRIES)),
  v.object(ENTRIES),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const o = dataset.value;
    if (o.schema !== undefined && o.schemaVersion !== undefined)
      addIssue({ message: 'schema and schemaVersion were both given: schema names the versions served (schema.current and schema.older), give it alone' });
    else if (o.firstSync !== undefined && o.pokes === false)
      addIssue({ message: 'firstSync needs pokes (pokes: false turns them off): the client pulls each next page when poked' });
    // A list is checked now, against the context's limits (each prefix must be a key it could hold).
    else if (o.firstSync?.order !== undefined && typeof o.firstSync.order !== 'function') checkOrder(o.firstSync.order, 'firstSync.order', o.limits);
  }),
);

/** The options as checked, each default filled in (retention's and the notifier are resolved by createContext). */
export type CheckedOptions = v.InferOutput<typeof SyncOptionsSchema>;

/** The rates, defaults filled in. */
export type ResolvedRates = NonNullable<CheckedOptions['rates']>;
/** The poke settings, defaults filled in. */
export type ResolvedPokes = Exclude<CheckedOptions['pokes'], false>;
/** CORS, defaults filled in. */
export type ResolvedCors = Exclude<CheckedOptions['cors'], false>;
/** The change feed, each webhook's defaults filled in. */
export type ResolvedChanges = NonNullable<CheckedOptions['changes']>;
/** One webhook, defaults filled in. */
export type ResolvedWebhook = NonNullable<ResolvedChanges['webhooks']>[string];
/** A first sync in pages, defaults filled in. */
export type ResolvedFirstSync = NonNullable<CheckedOptions['firstSync']>;
/** The inspector, defaults filled in. */
export type ResolvedInspector = NonNullable<CheckedOptions['inspector']>;

/** The options of `options`, checked and with their defaults; throws a TypeError naming the first wrong one and what it expected. */
export function parseOptions(options: unknown): CheckedOptions {
  const parsed = v.safeParse(SyncOptionsSchema, options, { abortEarly: true });
  if (parsed.success) return parsed.output;
  const issue = parsed.issues[0];
  throw new TypeError(issue.message.replaceAll('{where}', v.getDotPath(issue) ?? ''));
}

/** `pokes` resolved as createContext resolves them (for a PokeHub made without a context, as tests do). */
export function resolvePokes(pokes: PokeOptions): ResolvedPokes {
  return v.parse(PokesRule, pokes) as ResolvedPokes;
}

/** @internal The schema's entries, for the test that every option has a default or says what its absence means. */
export const OPTION_ENTRIES: Readonly<Record<string, v.GenericSchema>> = ENTRIES;
