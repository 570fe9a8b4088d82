import { request } from 'node:http';

/** An answer as it came over the wire: `node:http` leaves a compressed body compressed. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string | undefined>;
  body: Buffer;
}

/** Sends `body` with `node:http` (JSON, with `accept-encoding` only when given) and collects the answer's bytes. */
export function httpRequest(url: URL, method: string, body: string, accept?: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(accept === undefined ? {} : { 'accept-encoding': accept }) };
    const req = request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers as Record<string, string | undefined>, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
