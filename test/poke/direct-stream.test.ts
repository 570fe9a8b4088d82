import { describe, expect, test, vi } from 'vitest';
import { localNotifier } from '../../src/index.js';
import type { Sink } from '../../src/base/direct-stream.js';
import { testContext } from '../support/helpers.js';

/** A sink as an adapter's socket would be: what it was sent, as text, and whether it is behind. */
class FakeSink implements Sink {
  text = '';
  ended = false;
  /** Writes after its end: Node's response would emit an error that nothing catches. */
  late = 0;
  waiting = false;
  full = false;

  write(chunk: Uint8Array): void {
    if (this.ended) this.late++;
    this.text += new TextDecoder().decode(chunk);
  }

  end(): void {
    this.ended = true;
  }

  get pokes(): number {
    return this.text.split('data: poke\n\n').length - 1;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a poke stream taken over by an adapter', () => {
  test('gets what it held before, in order, then every poke, and its web stream is never read', async () => {
    const notifier = localNotifier();
    const hub = testContext({ pokes: { notifier, coalesceMs: 0 } }).hub!;
    const stream = await hub.open('');
    notifier.notify('');
    const sink = new FakeSink();
    stream.attach(sink);
    expect(sink.text).toBe('retry: 1000\n: viewsync pokes\n\ndata: open\n\ndata: poke\n\n');
    await sleep(5);
    notifier.notify('');
    await sleep(5);
    expect(sink.pokes).toBe(2);
    expect(stream.locked).toBe(false);
  });

  test('one ended before it was taken over ends its sink, after the retry field it was told', async () => {
    const hub = testContext().hub!;
    const stream = await hub.open('');
    hub.closeAll(1_000);
    const sink = new FakeSink();
    stream.attach(sink);
    expect(sink.text).toMatch(/data: open\n\nretry: \d+\n\n$/);
    expect(sink.ended).toBe(true);
    expect(hub.streams).toBe(0);
  });

  test('its client gone, it is released at once, and the pokes under way skip it', async () => {
    const notifier = localNotifier();
    const hub = testContext({ pokes: { notifier } }).hub!;
    const sinks = Array.from({ length: 1_200 }, () => new FakeSink());
    const gone = await Promise.all(sinks.map(async (sink) => (await hub.open('')).attach(sink)));
    notifier.notify('');
    // The first slice of 500 is poked at once; the rest once I/O has had a turn.
    expect(sinks.filter((sink) => sink.pokes === 1)).toHaveLength(500);
    for (const close of gone.slice(1_000)) close();
    expect(hub.streams).toBe(1_000);
    await sleep(20);
    expect(sinks.slice(0, 1_000).every((sink) => sink.pokes === 1)).toBe(true);
    expect(sinks.slice(1_000).every((sink) => sink.pokes === 0)).toBe(true);
    for (const close of gone.slice(0, 1_000)) close();
    expect(hub.streams).toBe(0);
  });

  test('ended while a poke is under way (a drain, its age), it is written no more', async () => {
    const notifier = localNotifier();
    const hub = testContext({ pokes: { notifier } }).hub!;
    const sinks = Array.from({ length: 1_200 }, () => new FakeSink());
    for (const sink of sinks) (await hub.open('')).attach(sink);
    notifier.notify('');
    hub.closeAll(1_000);
    await sleep(20);
    expect(sinks.every((sink) => sink.ended && sink.late === 0)).toBe(true);
    expect(sinks.filter((sink) => sink.pokes === 1)).toHaveLength(500);
  });

  test('a client that stops reading gets no more pokes once its sink is full, and the others all do', async () => {
    const notifier = localNotifier();
    const hub = testContext({ pokes: { notifier, coalesceMs: 0 } }).hub!;
    const [slow, ...others] = Array.from({ length: 3 }, () => new FakeSink());
    for (const sink of [slow!, ...others]) (await hub.open('')).attach(sink);
    slow!.full = slow!.waiting = true;
    for (let i = 0; i < 3; i++) {
      notifier.notify('');
      await sleep(5);
    }
    expect(slow!.pokes).toBe(0);
    expect(others.map((sink) => sink.pokes)).toEqual([3, 3]);
  });

  test('the one heartbeat timer reaches every taken-over stream, and ends one still behind at the next', async () => {
    // On fake timers: a busy machine can run a real sleep past a heartbeat.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const hub = testContext({ pokes: { heartbeatMs: 40 } }).hub!;
      const sinks = Array.from({ length: 3 }, () => new FakeSink());
      for (const sink of sinks) (await hub.open('')).attach(sink);
      sinks[0]!.waiting = true;
      await vi.advanceTimersByTimeAsync(40);
      expect(sinks.map((sink) => sink.text.endsWith(':\n\n'))).toEqual([false, true, true]);
      expect(hub.streams).toBe(3);
      await vi.advanceTimersByTimeAsync(40);
      expect(sinks.map((sink) => sink.ended)).toEqual([true, false, false]);
      expect(hub.streams).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });
});
