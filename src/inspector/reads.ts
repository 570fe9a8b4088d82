import type { SyncContext } from '../context/context.js';
import { HTTPError } from '../base/errors.js';
import { migrationsOf, webhookSummaries } from '../backend/inspect.js';
import { spacePage } from './space-page.js';
import { at, HistoryGoneError, readHistory } from '../backend/history.js';
import { read } from '../backend/read.js';
import { live, scanPages } from '../sync/version/patch.js';
import { readChanges } from '../backend/changes.js';
import { changeFeedStatus } from '../backend/feed-switch.js';
import { ChangeCursorError, ChangesGoneError } from '../sync/feed/feed-pages.js';
import { feedFrom } from '../sync/feed/change-log.js';
import { SpaceKeys } from '../sync/version/keys.js';
import type { Meta } from '../sync/version/records.js';
import { utf8Length } from '../base/utf8.js';
import type { JSONValue } from '../protocol/json.js';
import type { LoggedChange } from '../sync/history/log-reads.js';
import { pageLimit, text, whole } from './params.js';
import { spacesPage } from './spaces.js';
import { viewAs } from './view-as.js';
import type { FeedTail, KeyPage, KeyRow, KeysPage, LivePage, MigrationsPage, Overview, SpacePage, WebhooksPage } from './api-types.js';

/** The inspector API's reads (`GET <base>/api/<name>`), by name: each answers what api-types.ts says. */
export const READS: Readonly<Record<string, (ctx: SyncContext, query: URLSearchParams) => Promise<unknown>>> = {
  overview: async (ctx): Promise<Overview> => ({
    readOnly: ctx.inspector?.readOnly ?? false,
    view: ctx.view !== undefined,
    // The store's, not only this context's: every writer keeps the log once a context with `changes` wrote (the CLI's inspector has no option of its own).
    changes: ctx.changes !== undefined || ctx.history !== undefined || (await changeFeedStatus(ctx)).some(({ on }) => on),
    history: ctx.history !== undefined,
    webhooks: Object.keys(ctx.changes?.webhooks ?? {}),
    ...(ctx.storage.parts && { stores: Object.keys(ctx.storage.parts.stores) }),
    process: { pid: (globalThis as { process?: { pid?: number } }).process?.pid ?? null, startedAt: STARTED },
  }),

  spaces: (ctx, query) => spacesPage(ctx, text(query, 'prefix') ?? '', text(query, 'after'), pageLimit(query, 50)),

  space: (ctx, query): Promise<SpacePage> => spacePage(ctx, text(query, 'space', true)),

  keys: async (ctx, query): Promise<KeysPage> => {
    const space = text(query, 'space', true);
    const prefix = text(query, 'prefix') ?? '';
    const after = text(query, 'after');
    const limit = pageLimit(query, 100);
    const version = whole(query, 'version', 0, Number.MAX_SAFE_INTEGER);
    if (version !== undefined) {
      const page = await history(() => at(ctx, space, version, { prefix, ...(after !== undefined && { after }), limit }));
      return { version, entries: page.entries.map(([key, value]) => row(key, value)), ...(page.next !== undefined && { next: page.next }) };
    }
    // The version and the entries from one snapshot, so the version said is the one shown.
    const keys = new SpaceKeys(space);
    return ctx.storage.transaction(
      async (tx): Promise<KeysPage> => {
        const meta = (await tx.get(keys.meta)) as Meta | undefined;
        const entries: KeyRow[] = [];
        const start = { key: keys.entry(after ?? prefix), exclusive: after !== undefined };
        for await (const page of scanPages(tx, { prefix: keys.entry(prefix), start })) {
          for (const [key, value] of live(page, keys.entryPrefix.length)) {
            if (entries.length === limit) return { version: meta?.version ?? 0, entries, next: entries.at(-1)!.key };
            entries.push(row(key, value));
          }
        }
        return { version: meta?.version ?? 0, entries };
      },
      { readOnly: true, space },
    );
  },

  key: async (ctx, query): Promise<KeyPage> => {
    const space = text(query, 'space', true);
    const key = text(query, 'key', true);
    const before = whole(query, 'before', 1, Number.MAX_SAFE_INTEGER);
    const value = await read(ctx, space, (tx) => tx.get(key));
    const base = { key, ...(value !== undefined && { value: value as JSONValue }) };
    try {
      return { ...base, history: await newestChanges(ctx, space, key, before) };
    } catch (error) {
      if (error instanceof HistoryGoneError) return { ...base, noHistory: error.message };
      throw error;
    }
  },

  'view-as': (ctx, query) => {
    const user = text(query, 'user');
    return viewAs(
      ctx,
      text(query, 'space', true),
      user === '' ? undefined : user,
      text(query, 'group') || 'inspector',
      text(query, 'prefix') ?? '',
      text(query, 'after'),
      pageLimit(query, 100),
    );
  },

  live: async (ctx): Promise<LivePage> => {
    const live = ctx.state.live!;
    return { now: Date.now(), seconds: live.seconds(), latency: { push: live.latency('push'), pull: live.latency('pull') } };
  },

  feed: async (ctx, query): Promise<FeedTail> => {
    const space = text(query, 'space', true);
    let after = text(query, 'after');
    if (after === undefined) {
      // The tail: the last versions the log holds.
      const meta = await ctx.storage.transaction(async (tx) => (await tx.get(new SpaceKeys(space).meta)) as Meta | undefined, { readOnly: true, space });
      const from = feedFrom(meta);
      if (from === undefined)
        throw new HTTPError(404, `Space ${JSON.stringify(space)} keeps no whole change log now (the change feed is off, or was off for its last write)`);
      after = String(Math.max(from, (meta?.version ?? 0) - TAIL_VERSIONS));
    }
    try {
      return await readChanges(ctx, space, { after, limit: 100 });
    } catch (error) {
      if (error instanceof ChangeCursorError) throw new HTTPError(400, error.message);
      if (error instanceof ChangesGoneError) throw new HTTPError(410, error.message);
      throw error;
    }
  },

  webhooks: async (ctx, query): Promise<WebhooksPage> => {
    const space = text(query, 'space', true);
    const states = await webhookSummaries(ctx, space);
    const configured = ctx.changes?.webhooks ?? {};
    // The context's webhooks, and any other that delivered in the space (the CLI's inspector names none).
    const names = [...new Set([...Object.keys(configured), ...Object.keys(states)])];
    return {
      webhooks: names.map((name) => ({
        name,
        ...(Object.hasOwn(configured, name) && { url: configured[name]!.url }),
        ...(Object.hasOwn(states, name) && { state: states[name] }),
      })),
    };
  },

  migrations: async (ctx, query): Promise<MigrationsPage> => ({ migrations: (await migrationsOf(ctx, text(query, 'space', true))) ?? {} }),
};

/**
 * The last {@link KEY_CHANGES} changes of `key` before version `before` (all kept, without it),
 * newest first: the log is read oldest first (it has no index by key), keeping only the last ones.
 */
async function newestChanges(ctx: SyncContext, space: string, key: string, before = Infinity): Promise<NonNullable<KeyPage['history']>> {
  const last: LoggedChange[] = [];
  let after: number | undefined;
  for (;;) {
    const page = await readHistory(ctx, space, { key, limit: 10_000, ...(after !== undefined && { after }) });
    for (const change of page.changes) {
      if (change.version >= before) return done(page.kept);
      if (last.push(change) > KEY_CHANGES + 1) last.shift();
    }
    if (!page.more) return done(page.kept);
    after = page.version;
  }
  function done(kept: { from: number; to: number }) {
    const older = last.length > KEY_CHANGES;
    return { changes: last.slice(older ? 1 : 0).reverse(), kept, older };
  }
}

/** A key's changes a page shows. */
const KEY_CHANGES = 50;

/** When this process began: the live numbers start there. */
const STARTED = Date.now();

/** Versions the feed's tail reaches back. */
const TAIL_VERSIONS = 20;

/** A key browser's row: the value's JSON cut to a preview. */
function row(key: string, value: JSONValue): KeyRow {
  const json = JSON.stringify(value);
  return { key, json: json.length > PREVIEW ? json.slice(0, PREVIEW) : json, cut: json.length > PREVIEW, bytes: utf8Length(json) };
}

const PREVIEW = 1_000;

/** A history read, its HistoryGoneError a 410 saying why. */
async function history<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof HistoryGoneError) throw new HTTPError(410, error.message);
    throw error;
  }
}
