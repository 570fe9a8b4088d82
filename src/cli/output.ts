/** What the CLI's commands print with. */

/** A line on stdout. */
export function print(text: string): void {
  process.stdout.write(text + '\n');
}

/** A time (ms since the epoch) as `YYYY-MM-DD hh:mm:ss` UTC; `-` for none. */
export function date(ms: number | null): string {
  return ms === null ? '-' : new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

/** A client's text for a terminal: control characters escaped (no client moves the cursor or rings the bell), at most 60 characters. */
export function printable(text: string): string {
  const escaped = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return escaped.length > 60 ? `${escaped.slice(0, 59)}…` : escaped;
}

/** Rows under their headings, each column as wide as its widest cell (the last left as is). */
export function table(rows: string[][], headings: string[]): string {
  const widths = headings.map((heading, i) => Math.max(heading.length, ...rows.map((row) => row[i]!.length)));
  return [headings, ...rows].map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n');
}
