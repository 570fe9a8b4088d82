/**
 * The client side of bench/first-sync.ts, the same code in Node and in the browser (bundled by
 * esbuild): the stock `replicache` client and `connectPokes`, nothing else, syncing a space from
 * nothing. It records each pull's answer (its size, and whether its cookie is a page's) through the
 * `fetch` it is given, and resolves once an answer's cookie is no page's and the client holds at
 * least `entries` keys.
 */
import { Replicache, TEST_LICENSE_KEY } from 'replicache';
import { connectPokes } from '../src/client/index.js';

export interface FirstSyncRun {
  ms: number;
  pulls: number;
  pages: number;
  largest: number;
  held: number;
  /** Milliseconds from the start at which each answer was read, and the entries it said it reached. */
  progress: Array<[ms: number, entries: number]>;
}

export async function firstSync(server: string, space: string, entries: number): Promise<FirstSyncRun> {
  const start = performance.now();
  const run: FirstSyncRun = { ms: 0, pulls: 0, pages: 0, largest: 0, held: 0, progress: [] };
  let done!: () => void;
  const ended = new Promise<void>((resolve) => (done = resolve));
  const original = globalThis.fetch.bind(globalThis);
  const recording = async (input: RequestInfo | URL, init?: RequestInit) => {
    const response = await original(input, init);
    const url = input instanceof Request ? input.url : String(input);
    if (!url.includes('/pull') || response.status !== 200) return response;
    const text = await response.clone().text();
    run.pulls++;
    run.largest = Math.max(run.largest, text.length);
    // The cookie is the answer's last member when the answer was read as it was sent.
    const cookie = (JSON.parse(text) as { cookie: { page?: string } | null }).cookie;
    if (cookie?.page !== undefined) {
      run.pages++;
      const after = (JSON.parse(cookie.page) as [number, number, string | null])[2] ?? '';
      run.progress.push([Math.round(performance.now() - start), Number(after.slice(after.lastIndexOf('/') + 1)) + 1]);
    } else {
      run.progress.push([Math.round(performance.now() - start), entries]);
      done();
    }
    return new Response(text, { status: response.status, headers: response.headers });
  };
  const name = `first-sync-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  const rep = new Replicache({
    name,
    licenseKey: TEST_LICENSE_KEY,
    pullURL: `${server}/pull?space=${space}`,
    pushURL: `${server}/push?space=${space}`,
    pullInterval: null,
    mutators: {},
    puller: async (request, requestID) => {
      const response = await recording(`${server}/pull?space=${space}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-replicache-requestid': requestID },
        body: JSON.stringify(request),
      });
      return { response: response.status === 200 ? await response.json() : undefined, httpRequestInfo: { httpStatusCode: response.status, errorMessage: '' } };
    },
  });
  const pokes = connectPokes(rep, `${server}/poke?space=${space}`);
  await ended;
  // The last answer is applied once the puller has returned it: wait for it to show.
  for (;;) {
    run.held = await rep.query(async (tx) => (await tx.scan().keys().toArray()).length);
    if (run.held >= entries) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  run.ms = Math.round(performance.now() - start);
  pokes.close();
  await rep.close();
  return run;
}
