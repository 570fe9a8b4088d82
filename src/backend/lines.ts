/** Where an import reads a dump from: a request body, a file stream, stdin, or text at hand. */
export type DumpSource = ReadableStream<Uint8Array | string> | AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string> | string;

/** A line of a dump, without its line break, and its number (from 1). */
export interface Line {
  text: string;
  number: number;
}

/**
 * The lines of `source`, cut anywhere (a chunk may end inside a line or inside a character):
 * split at `\n`, with a `\r` before it dropped. A line longer than `maxChars` throws a
 * {@link DumpError} before it is held whole, so a dump without line breaks cannot fill memory.
 */
export async function* lines(source: DumpSource, maxChars: number): AsyncGenerator<Line> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let pending = '';
  /** How much of `pending` holds no line break: a long line arriving in small chunks is searched once. */
  let searched = 0;
  let number = 0;
  const decode = (chunk: Uint8Array | string, stream: boolean): string => {
    if (typeof chunk === 'string') return chunk;
    try {
      return decoder.decode(chunk, { stream });
    } catch {
      throw new DumpError(number + 1 + badSegment(chunk), 'is not UTF-8');
    }
  };
  for await (const chunk of iterate(source)) {
    pending += decode(chunk, true);
    let from = 0;
    for (let end = pending.indexOf('\n', searched); end >= 0; end = pending.indexOf('\n', from)) {
      number++;
      if (end - from > maxChars) throw tooLong(number, maxChars);
      yield { text: trimCR(pending.slice(from, end)), number };
      from = end + 1;
    }
    pending = pending.slice(from);
    searched = pending.length;
    if (pending.length > maxChars) throw tooLong(number + 1, maxChars);
  }
  pending += decode(new Uint8Array(), false);
  if (pending.length > 0) yield { text: trimCR(pending), number: number + 1 };
}

/** What is wrong with a dump, and on which line: nothing of it was imported. */
export class DumpError extends Error {
  override name = 'DumpError';
  /** The line at fault, from 1. */
  readonly line: number;
  constructor(line: number, problem: string) {
    super(`line ${line} of the dump ${problem}`);
    this.line = line;
  }
}

/**
 * Which of the chunk's newline-separated pieces holds the bytes that are not UTF-8 (0: the line
 * the chunk continues). A newline byte is never part of a longer character, so each piece can be
 * checked alone; bytes continuing a character the previous chunk began are skipped.
 */
function badSegment(chunk: Uint8Array): number {
  let start = 0;
  while (start < Math.min(3, chunk.length) && (chunk[start]! & 0xc0) === 0x80) start++;
  for (let index = 0; ; index++) {
    const end = chunk.indexOf(10, start);
    try {
      // The last piece may end inside a character that the next chunk completes.
      new TextDecoder('utf-8', { fatal: true }).decode(chunk.subarray(start, end < 0 ? chunk.length : end), { stream: end < 0 });
    } catch {
      return index;
    }
    if (end < 0) return index;
    start = end + 1;
  }
}

function tooLong(line: number, maxChars: number): DumpError {
  return new DumpError(line, `is longer than ${maxChars} characters, more than an entry within the key and value limits can take`);
}

function trimCR(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}

/** The chunks of a stream or an async iterable, releasing a stream's lock however the loop ends. */
async function* iterate(source: DumpSource): AsyncGenerator<Uint8Array | string> {
  if (typeof source === 'string') return yield source;
  if (!('getReader' in source)) return yield* source;
  const reader = source.getReader();
  let done = false;
  try {
    for (let next = await reader.read(); !(done = next.done); next = await reader.read()) yield next.value;
  } finally {
    // A dump refused halfway: its sender need not send the rest.
    if (!done) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
