/**
 * Where the server may send a request it was told to make (a webhook's URL): not to itself, its
 * network or its cloud's metadata service, unless told it may. A URL naming such an address, or
 * a name that resolves to one, is refused before anything is sent; redirects are not followed
 * (the caller sends with `redirect: 'manual'`), so a receiver cannot point the request elsewhere.
 * A name is resolved where the runtime offers `node:dns` (Node, Bun, Deno); elsewhere (workerd)
 * the platform itself cannot reach private addresses. The name is resolved again by `fetch`: a
 * name whose answers change between the two (DNS rebinding) is not caught here.
 */

/** A target refused: what the URL is, and why. */
export class OutboundTargetError extends Error {
  override name = 'OutboundTargetError';
}

/** Throws an {@link OutboundTargetError} unless `url` is http(s) to a public address (any address with `allowPrivate`). */
export async function checkTarget(url: URL, allowPrivate: boolean): Promise<void> {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new OutboundTargetError(`${url.protocol} is not http: or https:`);
  if (allowPrivate) return;
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const refuse = (address: string) =>
    new OutboundTargetError(
      `${url.host} is ${address === host ? '' : `${address}, `}a loopback, private, link-local or reserved address; allowPrivateAddresses lets a webhook reach one`,
    );
  if (isIP(host)) {
    if (isPrivateAddress(host)) throw refuse(host);
    return;
  }
  if (host === 'localhost' || host.endsWith('.localhost')) throw refuse(host);
  for (const address of await resolve(host)) if (isPrivateAddress(address)) throw refuse(address);
}

/** Whether `address` (IPv4 dotted, or IPv6) is loopback, private, link-local, shared, multicast or otherwise not on the public internet. */
export function isPrivateAddress(address: string): boolean {
  const v4 = parseIPv4(address);
  if (v4 !== undefined) return privateIPv4(v4);
  const v6 = parseIPv6(address);
  if (v6 === undefined) return true;
  const [first, second] = v6 as [number, number];
  const zero = (from: number, to: number) => v6.slice(from, to).every((part) => part === 0);
  const embeds = (at: number, flip = 0) => privateIPv4(ipv4At(v6, at, flip));
  // An address that stands for an IPv4 address is judged by it: IPv4-compatible (::a.b.c.d, with
  // :: and ::1), IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d, RFC 2765) and
  // NAT64 (64:ff9b::a.b.c.d, RFC 6052).
  if (zero(0, 6) || (zero(0, 5) && v6[5] === 0xffff) || (zero(0, 4) && v6[4] === 0xffff && v6[5] === 0) || (first === 0x64 && second === 0xff9b && zero(2, 6)))
    return embeds(6);
  // One that carries an IPv4 address to reach it by is refused when that address is private: 6to4
  // (2002:a.b.c.d::/48, RFC 3056), Teredo (2001:0::/32, RFC 4380: its server's address, and its
  // client's with every bit flipped) and ISATAP interface IDs (…:0:5efe:a.b.c.d, RFC 5214, the u
  // and g bits either way).
  if (
    (first === 0x2002 && embeds(1)) ||
    (first === 0x2001 && second === 0 && (embeds(2) || embeds(6, 0xffff))) ||
    ((v6[4]! & 0xfcff) === 0 && v6[5] === 0x5efe && embeds(6))
  )
    return true;
  // The rest of 64:ff9b::/32 (local-use NAT64, 64:ff9b:1::/48, RFC 8215), fc00::/7 unique local, fe80::/10 link-local, fec0::/10 site-local, ff00::/8 multicast, 2001:db8::/32 documentation.
  return (
    (first === 0x64 && second === 0xff9b) ||
    (first & 0xfe00) === 0xfc00 ||
    (first & 0xffc0) === 0xfe80 ||
    (first & 0xffc0) === 0xfec0 ||
    (first & 0xff00) === 0xff00 ||
    (first === 0x2001 && second === 0xdb8)
  );
}

function privateIPv4([a, b]: number[]): boolean {
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b! >= 64 && b! < 128) ||
    (a === 169 && b === 254) ||
    (a === 172 && b! >= 16 && b! < 32) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0) ||
    (a === 198 && (b === 18 || b === 19)) ||
    a! >= 224
  );
}

function isIP(host: string): boolean {
  return parseIPv4(host) !== undefined || host.includes(':');
}

function parseIPv4(text: string): number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((part) => /^\d{1,3}$/.test(part) && Number(part) <= 255)) return undefined;
  return parts.map(Number);
}

/** The eight 16-bit groups of an IPv6 address (a dotted IPv4 tail taken), or undefined. */
function parseIPv6(text: string): number[] | undefined {
  const zone = text.indexOf('%');
  let rest = zone < 0 ? text : text.slice(0, zone);
  const tail = /:(\d+\.\d+\.\d+\.\d+)$/.exec(rest);
  if (tail) {
    const v4 = parseIPv4(tail[1]!);
    if (v4 === undefined) return undefined;
    rest = `${rest.slice(0, -tail[1]!.length)}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`;
  }
  const halves = rest.split('::');
  if (halves.length > 2) return undefined;
  const groups = (half: string) => (half === '' ? [] : half.split(':').map((group) => (/^[0-9a-f]{1,4}$/i.test(group) ? parseInt(group, 16) : NaN)));
  const head = groups(halves[0]!);
  const after = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - head.length - after.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const all = [...head, ...Array<number>(halves.length === 2 ? missing : 0).fill(0), ...after];
  return all.every((group) => Number.isInteger(group)) ? all : undefined;
}

/** The IPv4 address in groups `at` and `at + 1` of `v6`, its bits flipped by `flip` (Teredo's client). */
function ipv4At(v6: number[], at: number, flip: number): number[] {
  const [high, low] = [v6[at]! ^ flip, v6[at + 1]! ^ flip];
  return [high >> 8, high & 0xff, low >> 8, low & 0xff];
}

/** The addresses `host` resolves to, where the runtime can tell (see above); none elsewhere. */
async function resolve(host: string): Promise<string[]> {
  const dns = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule?.('node:dns') as
    | { promises: { lookup(host: string, options: { all: true }): Promise<Array<{ address: string }>> } }
    | undefined;
  if (dns === undefined) return [];
  try {
    return (await dns.promises.lookup(host, { all: true })).map(({ address }) => address);
  } catch (error) {
    throw new OutboundTargetError(`${host} does not resolve: ${(error as Error).message}`);
  }
}
