/** The inspector page's words for numbers, sizes, times, changes and what made them. */
import { h } from './dom.js';

const number = new Intl.NumberFormat('en');
/** @param {number|undefined|null} n */
export const num = (n) => (typeof n === 'number' ? number.format(n) : '—');

/** Bytes in human units (1 KB = 1,000 bytes, as disks and quotas say). @param {number|undefined} n */
export function bytes(n) {
  if (typeof n !== 'number') return '—';
  const units = ['bytes', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return i === 0 ? `${number.format(n)} bytes` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** A time, as a <time> element with the local date and time. @param {number|null|undefined} ms */
export function time(ms) {
  if (typeof ms !== 'number') return '—';
  const date = new Date(ms);
  return h('time', { datetime: date.toISOString() }, date.toLocaleString());
}

/** How long ago, in words. @param {number} ms */
export function ago(ms) {
  const s = Math.round((Date.now() - ms) / 1000);
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

/** A JSON value on one line, cut to `max` characters; absent values say so. @param {any} value */
export function short(value, max = 80, absent = '(absent)') {
  if (value === undefined) return absent;
  const text = JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A change's values as "before → after", each in <code>. */
export function change(before, after, max = 80) {
  return [h('code', null, short(before, max)), ' → ', h('code', null, short(after, max, '(deleted)'))];
}

/** What made a change (ChangeOrigin), briefly. @param {any} by */
export function origin(by) {
  if (!by) return '—';
  switch (by.kind) {
    case 'mutation':
      return `mutation ${by.name} by ${by.userID === null ? 'anonymous' : `user ${by.userID}`} (group ${by.clientGroupID}, client ${by.clientID} #${by.mutationID})`;
    case 'backend':
      return `backend ${by.call}${by.name ? ` ${by.name}` : ''}${by.userID !== null && by.userID !== undefined ? ` for user ${by.userID}` : ''}`;
    case 'migration':
      return `migration ${by.name}`;
    case 'restore':
      return `restore to v${by.to}${by.prefix ? ` (keys starting with ${by.prefix})` : ''}`;
    case 'revert':
      return `revert${by.cause ? ` of ${cause(by.cause)}` : ''}`;
    case 'erase':
      return 'erase';
    default:
      return String(by.kind);
  }
}

/** A revert's cause in words. @param {any} c */
function cause(c) {
  const parts = [];
  if (c.mutation) parts.push(`mutation ${c.mutation.clientID} #${c.mutation.mutationID}`);
  if (c.userID !== undefined) parts.push(`user ${c.userID}`);
  if (c.clientGroupID !== undefined) parts.push(`group ${c.clientGroupID}`);
  if (c.mutator !== undefined) parts.push(`mutator ${c.mutator}`);
  if (c.versions) parts.push(`v${c.versions[0]}–v${c.versions[1]}`);
  if (c.since !== undefined) parts.push(`since ${new Date(c.since).toLocaleString()}`);
  return parts.join(', ') || 'everything';
}

/** The quota use of a space as percentages of each bound given. @param {any} row */
export function quotaUse(row) {
  const q = row.quota;
  if (!q) return '—';
  const parts = [];
  if (typeof q.bytes === 'number' && typeof row.bytes === 'number') parts.push(`${pct(row.bytes, q.bytes)} of bytes`);
  if (typeof q.entries === 'number' && typeof row.entries === 'number') parts.push(`${pct(row.entries, q.entries)} of entries`);
  const historyBound = q.historyBytes === false ? undefined : (q.historyBytes ?? q.bytes);
  if (typeof historyBound === 'number' && typeof row.history === 'number') parts.push(`${pct(row.history, historyBound)} of history`);
  return parts.join(', ') || '—';
}
/** @param {number} n @param {number} of */
const pct = (n, of) => (of === 0 ? (n === 0 ? '0%' : '∞') : `${Math.round((n / of) * 100)}%`);

/** A schema version: '' is one too. @param {string|null} v */
export const schema = (v) => (v === null ? '—' : v === '' ? '(empty)' : v);

/** A move in progress, in words. @param {any} move */
export function moveText(move) {
  if (!move) return '—';
  const progress = move.copied !== undefined ? ` (${num(move.copied)}${move.of !== undefined ? ` of ${num(move.of)}` : ''} copied)` : '';
  return `${move.step}: ${move.from} → ${move.to}${progress}`;
}
