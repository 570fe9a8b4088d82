/** What the CLI's commands print with. */

/** A line on stdout. */
export function print(text: string): void {
  process.stdout.write(text + '\n');
}

/** A time (ms since the epoch) as `YYYY-MM-DD hh:mm:ss` UTC; `-` for none. */
export function date(ms: number | null): string {
  return ms === null ? '-' : new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}
