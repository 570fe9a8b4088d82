/** The inspector's live page, `#/live`: this process's requests over the last minute. */
import { api, overview } from '../api.js';
import { failed, h, page, say, statusBox, svg, table } from '../dom.js';
import { num } from '../format.js';
import { alive, every } from '../router.js';

const SERIES = /** @type {const} */ ([
  ['pushes', 'Pushes'],
  ['pulls', 'Pulls'],
  ['pokes', 'Pokes'],
  ['mutations', 'Mutations'],
  ['errors', 'Errors (5xx)'],
  ['refusals', 'Refusals (429)'],
]);

/** `#/live`: this process's last minute, redrawn every second. */
export async function livePage(signal) {
  const charts = SERIES.map(([field, label]) => {
    const line = svg('polyline', { class: 'line', points: '' });
    const chart = svg('svg', { viewBox: '0 0 600 100', preserveAspectRatio: 'none', role: 'img', 'aria-label': `${label} a second, last 60 seconds` });
    chart.append(svg('line', { class: 'axis', x1: 0, y1: 99, x2: 600, y2: 99 }), line);
    const caption = h('figcaption', null, `${label} a second: —`);
    const peak = h('p', { class: 'muted' }, '');
    return { field, label, line, chart, caption, peak, figure: h('figure', null, caption, chart, peak) };
  });
  const latency = h('div');
  const { pid, startedAt } = overview.process;
  page(
    'Live',
    h(
      'p',
      { class: 'muted' },
      `These numbers are this process's alone (pid ${pid ?? 'unknown'}, started ${startedAt ? new Date(startedAt).toLocaleString() : '—'}); each instance counts its own. They refresh every second.`,
    ),
    h(
      'div',
      { class: 'charts' },
      charts.map((c) => c.figure),
    ),
    h('h2', null, 'Latency'),
    latency,
  );
  const draw = async () => {
    let data;
    try {
      data = await api('live', {}, { signal });
    } catch (error) {
      if (alive(signal)) failed(error);
      return;
    }
    if (!alive(signal)) return;
    if (statusBox.className === 'error') say('');
    const start = data.now - 60_000;
    for (const c of charts) {
      const values = data.seconds.map((s) => s[c.field] ?? 0);
      const max = Math.max(1, ...values);
      c.line.setAttribute(
        'points',
        data.seconds.map((s, i) => `${Math.max(0, ((s.t - start) / 60_000) * 600).toFixed(1)},${(98 - (values[i] / max) * 94).toFixed(1)}`).join(' '),
      );
      // The last whole second, and this one so far: a push late in a second is in the first at the next poll (this one, alone, would never show it).
      c.caption.textContent = `${c.label} a second: ${num(values.at(-2) ?? 0)} (${num(values.at(-1) ?? 0)} so far this second)`;
      c.peak.textContent = `Peak in the last minute: ${num(Math.max(0, ...values))}`;
    }
    const row = (name, p) => [name, [num(p.p50), 'num'], [num(p.p90), 'num'], [num(p.p99), 'num'], [num(p.count), 'num']];
    latency.replaceChildren(
      table(
        'Latency over the last minute, in milliseconds',
        ['Request', ['p50', 'num'], ['p90', 'num'], ['p99', 'num'], ['Count', 'num']],
        [row('Push', data.latency.push), row('Pull', data.latency.pull)],
      ),
    );
  };
  await draw();
  every(draw, 1000);
}
