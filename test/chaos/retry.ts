/** Retries for the chaos runner: a control call to a server that the faults may have down. */

/** Calls `call` until it answers 200, backing off from 50 ms to 1 s; past `tries`, throws what the last try got. */
export async function retry(call: () => Promise<Response>, tries = 100): Promise<Response> {
  for (let n = 1; ; n++) {
    try {
      const response = await call();
      if (response.status === 200) return response;
      if (n >= tries) throw new Error(`answered ${response.status}: ${await response.text()}`);
    } catch (error) {
      if (n >= tries) throw error;
    }
    await sleep(Math.min(50 * n, 1_000));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
