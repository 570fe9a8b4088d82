import type { Reply } from '../base/reply.js';
import type { Patch } from '../sync/version/patch.js';
import type { PullEnd } from '../sync/process-pull.js';

/**
 * A pull answer as a JSON reply. A small one is a single string, as any response; one over
 * {@link STREAM_AT} characters is a stream that serialises the patch a slice at a time as the
 * client reads it. So a large space never needs one string (V8 caps a string near 512 MiB), and
 * a client that reads slowly, or not at all, holds the patch's operations, which share their
 * values with the store, rather than a copy of its text. Puts that hold their value as JSON
 * text (`TextPut`) have it copied in as it is.
 *
 * Pulls that shared a read share their patch (shared-reads.ts): a short patch's text is kept
 * with it, so that a poke storm's answers serialise it once, not once each.
 */
export function pullBody(body: { patch: Patch; rest?: AsyncGenerator<Patch, PullEnd, undefined> | undefined }, sent?: { chars: number }): Reply {
  if (body.rest !== undefined) return readAsSent(body.patch, body.rest, sent ?? { chars: 0 });
  const { patch } = body;
  // `{"cookie":…,"lastMutationIDChanges":…}` less its `}`, then the patch. Every answer with a
  // patch has a cookie, so the head is never `{}`.
  // Not a spread: adding a field to an object V8 cloned by spreading cost a microsecond (Node 20).
  const head = JSON.stringify(Object.assign({}, body, NO_PATCH)).slice(0, -1) + ',"patch":[';
  const short = shortText(patch);
  if (short !== undefined && head.length + short.length <= STREAM_AT) return { status: 200, headers: jsonType(), body: head + short + ']}' };
  const pieces = [head];
  let length = head.length;
  const slices = patchSlices(patch);
  for (let next = slices.next(); ; next = slices.next()) {
    if (next.done) return { status: 200, headers: jsonType(), body: pieces.join('') + ']}' };
    // Each slice is a JSON array: its items, less the brackets, joined by commas.
    pieces.push((pieces.length > 1 ? ',' : '') + next.value.slice(1, -1));
    length += next.value.length;
    if (length > STREAM_AT) break;
  }

  const encoder = new TextEncoder();
  let first: string | undefined = pieces.join('');
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (first !== undefined) {
          controller.enqueue(encoder.encode(first));
          first = undefined;
          return;
        }
        const next = slices.next();
        if (next.done) {
          controller.enqueue(encoder.encode(']}'));
          controller.close();
          return;
        }
        // Encode the slice as it is and turn its brackets into the separators in place: a slice
        // can be a megabyte, and slicing the string first would copy it twice more.
        const bytes = encoder.encode(next.value);
        bytes[0] = 0x2c; // ',' (a slice here always follows another)
        controller.enqueue(bytes.subarray(0, bytes.length - 1));
      },
      // No read-ahead: a slice is made only when the reader asks for it.
    },
    { highWaterMark: 0 },
  );
  return { status: 200, headers: jsonType(), body: stream };
}

/**
 * A reset read as it is sent (reset-pages.ts): its start, then each page as the client reads,
 * then the answer's other fields, known only at its end (JSON's members may come in any order).
 * `sent` counts the characters of operations sent (a first sync in pages ends a page on it).
 * A client that goes stops the reads; a read that fails breaks the answer off, which the client
 * drops, to pull again.
 */
function readAsSent(start: Patch, rest: AsyncGenerator<Patch, PullEnd, undefined>, sent: { chars: number }): Reply {
  const encoder = new TextEncoder();
  let slices: Generator<string, void> = patchSlices(start);
  let head = '{"patch":[';
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        for (;;) {
          const slice = slices.next();
          if (!slice.done) {
            sent.chars += slice.value.length;
            const bytes = encoder.encode(slice.value);
            // The slice's brackets become the separators in place (see pullBody).
            if (head !== '') {
              controller.enqueue(encoder.encode(head));
              head = '';
              controller.enqueue(bytes.subarray(1, bytes.length - 1));
            } else {
              bytes[0] = 0x2c; // ','
              controller.enqueue(bytes.subarray(0, bytes.length - 1));
            }
            return;
          }
          const page = await rest.next();
          if (page.done) {
            controller.enqueue(encoder.encode(`${head}],${JSON.stringify(page.value).slice(1)}`));
            controller.close();
            return;
          }
          slices = patchSlices(page.value);
        }
      },
      async cancel() {
        await rest.return(undefined as never);
      },
    },
    { highWaterMark: 0 },
  );
  return { status: 200, headers: jsonType(), body: stream };
}

/**
 * The operations of a patch of at most {@link SHORT_PATCH} of them, as the text between the
 * brackets of its JSON array, once per patch; undefined for a longer patch, or one whose text
 * is longer than {@link STREAM_AT} (a few large values could make it so: it is then streamed).
 */
function shortText(patch: Patch): string | undefined {
  if (patch.length > SHORT_PATCH) return undefined;
  // An up-to-date pull's empty patch, the most common one, is new each time: kept, each would cost a WeakMap entry.
  if (patch.length === 0) return '';
  let text = shortTexts.get(patch);
  if (text === undefined) {
    text = sliceText(patch, 0, patch.length).slice(1, -1);
    // A long text is not kept: each answer streams its own slices, made as its client reads.
    if (text.length > STREAM_AT) text = null;
    shortTexts.set(patch, text);
  }
  return text ?? undefined;
}

/** The text of each short patch, or null for a short patch whose text is long. */
const shortTexts = new WeakMap<Patch, string | null>();

/**
 * The patch's operations as JSON arrays, a slice at a time. Slices start at one operation and
 * double while they stay under {@link SLICE_CHARS}, so a slice is never much more than that or
 * than one value (at most `limits.valueBytes`), whatever the values' sizes.
 */
function* patchSlices(patch: Patch): Generator<string, void> {
  let count = 1;
  for (let i = 0; i < patch.length; ) {
    const end = Math.min(patch.length, i + count);
    const text = sliceText(patch, i, end);
    yield text;
    i = end;
    if (text.length > SLICE_CHARS * 2) count = Math.max(1, count >> 1);
    else if (text.length < SLICE_CHARS / 2) count = Math.min(4096, count * 2);
  }
}

/**
 * Operations `from` to `to` of `patch` as a JSON array: one native `JSON.stringify` when none
 * holds its value as text, else each operation in turn, a text value copied in.
 */
function sliceText(patch: Patch, from: number, to: number): string {
  let texts = false;
  for (let i = from; i < to && !texts; i++) texts = 'text' in patch[i]!;
  if (!texts) return JSON.stringify(patch.slice(from, to));
  let text = '[';
  for (let i = from; i < to; i++) {
    const op = patch[i]!;
    if (i > from) text += ',';
    text += 'text' in op ? `{"op":"put","key":${JSON.stringify(op.key)},"value":${op.text}}` : JSON.stringify(op);
  }
  return text + ']';
}

/** The fields stringified apart from the head. */
const NO_PATCH = { patch: undefined };

/** A reply's own headers, which later steps add to: a literal, which V8 adds fields to faster than to a spread copy. */
function jsonType(): Record<string, string> {
  return { 'content-type': 'application/json' };
}
/** Patches of at most this many operations are first tried as one string. */
const SHORT_PATCH = 64;
/** Answers longer than this many characters are streamed. */
const STREAM_AT = 1024 * 1024;
const SLICE_CHARS = 64 * 1024;
