/** One line of the results table. */
export interface Row {
  benchmark: string;
  value: number;
  unit: string;
  note?: string;
}

/** Formats a number with about three significant digits, thousands grouped for big ones. */
export function formatValue(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toPrecision(3);
}

/** The rows as a plain-text table with aligned columns; values are right-aligned to compare. */
export function renderTable(rows: readonly Row[]): string {
  const header = ['benchmark', 'value', 'unit', 'note'];
  const cells = rows.map((row) => [row.benchmark, formatValue(row.value), row.unit, row.note ?? '']);
  const widths = header.map((title, c) => Math.max(title.length, ...cells.map((line) => line[c]!.length)));
  const line = (parts: readonly string[]) =>
    parts
      .map((part, c) => (c === 1 ? part.padStart(widths[c]!) : part.padEnd(widths[c]!)))
      .join(' | ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('-|-');
  return [line(header), rule, ...cells.map(line)].join('\n');
}
