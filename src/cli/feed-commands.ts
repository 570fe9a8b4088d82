import type { SyncContext } from '../context/context.js';
import { allSpaces } from '../context/collect-garbage.js';
import { changeFeedStatus, turnOffChangeFeed } from '../backend/feed-switch.js';
import { enableDeliveries } from '../backend/webhooks.js';
import { ChangesGoneError } from '../sync/feed/feed-pages.js';
import { CLIError } from './store.js';
import { UsageError } from './usage.js';
import { date, print } from './output.js';

/**
 * The operator's commands of the change feed: `feed` (is it on; `feed off`) and `webhook enable`
 * (after a webhook was disabled; `--after-gap` past a gap in the log). Each prints what it did,
 * and resolves with the exit code.
 */

/** `viewsync feed [status|off]`. */
export async function feedCommand(ctx: SyncContext, action: string | undefined, json: boolean): Promise<number> {
  if (action === 'off') {
    const { spaces } = await turnOffChangeFeed(ctx);
    print(
      `The change feed is off: writes leave the spaces' change logs from now (${spaces === 1 ? '1 space' : `${spaces} spaces`} kept one until now; what the logs hold stays readable until trimmed). A server whose options still have \`changes\` goes on keeping the logs of the spaces it writes: take \`changes\` out of every server.`,
    );
    return 0;
  }
  const stores = await changeFeedStatus(ctx);
  if (json) return (print(JSON.stringify(stores, null, 2)), 0);
  for (const { store, on, since } of stores) {
    const where = store === undefined ? 'This store' : `Store ${JSON.stringify(store)}`;
    if (since === null) print(`${where} does not keep the change feed: no server with \`changes\` has written to it.`);
    else if (on)
      print(
        `${where} keeps the change feed (since ${date(since)}): every write keeps the change log of each space that has one, and of every new space, whoever writes.`,
      );
    else
      print(
        `${where} had the change feed turned off at ${date(since)} ('viewsync feed off'): writes leave the spaces' change logs until a server with \`changes\` writes.`,
      );
  }
  return 0;
}

/**
 * `viewsync webhook enable NAME SPACE|--all [--after-gap]`: enables a webhook where it was
 * disabled. A space whose log lost what the webhook had to send is refused unless `--after-gap`,
 * and with `--all` the others go on; exit 1 if any was refused.
 */
export async function webhookCommand(ctx: SyncContext, rest: readonly string[], options: { all?: boolean; 'after-gap'?: boolean }): Promise<number> {
  const [action, name, space, ...extra] = rest;
  if (action !== 'enable')
    throw new UsageError(
      `webhook takes enable${action === undefined ? '' : `, got ${JSON.stringify(action)}`}: viewsync webhook enable NAME SPACE|--all [--after-gap]`,
    );
  if (name === undefined) throw new UsageError("webhook enable needs the webhook's NAME, as the servers' changes.webhooks name it");
  if ((space === undefined) === !options.all || extra.length > 0) throw new UsageError('webhook enable takes one SPACE or --all');
  const afterGap = options['after-gap'] === true;
  const spaces = space !== undefined ? [space] : await allSpaces(ctx.storage);
  let enabled = 0;
  let refused = 0;
  let known = 0;
  for (const each of spaces) {
    try {
      const done = await enableDeliveries(ctx, name, each, { afterGap });
      if (done !== undefined) known++;
      if (done === true) {
        enabled++;
        print(`enabled webhook ${JSON.stringify(name)} in ${JSON.stringify(each)}${afterGap ? ' (after the gap, where there was one)' : ''}`);
      }
    } catch (error) {
      if (!(error instanceof ChangesGoneError)) throw error;
      refused++;
      process.stderr.write(`viewsync: ${error.message}\n`);
    }
  }
  if (known === 0 && refused === 0)
    throw new CLIError(
      `No webhook named ${JSON.stringify(name)} has delivered${space === undefined ? ' in any space' : ` in ${JSON.stringify(space)}`}: is the name the servers' (changes.webhooks)? 'viewsync inspect SPACE' lists a space's webhooks`,
    );
  if (enabled === 0 && refused === 0)
    print(`Webhook ${JSON.stringify(name)} was not disabled${space === undefined ? ' in any space' : ` in ${JSON.stringify(space)}`}: nothing to enable.`);
  return refused === 0 ? 0 : (process.stderr.write(`viewsync: ${refused === 1 ? '1 space' : `${refused} spaces`} left disabled: see above\n`), 1);
}
