/** Where webhooks may not go: loopback, private, link-local and reserved addresses, however written. */
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { checkTarget, isPrivateAddress, OutboundTargetError } from '../../src/base/outbound.js';

describe('outbound targets', () => {
  it('tells private addresses from public ones, in every form an address takes', () => {
    const private_ = ['127.0.0.1', '127.1.2.3', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '0.0.0.0', '100.64.0.1', '198.18.0.1', '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fe80::1%eth0', 'fc00::1', 'fd12:3456::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:169.254.169.254', '64:ff9b::10.0.0.1', 'ff02::1', '2001:db8::1', 'not an address'];
    const public_ = ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '2001:4860:4860::8888', '64:ff9b::8.8.8.8'];
    expect(private_.filter((address) => !isPrivateAddress(address))).toEqual([]);
    expect(public_.filter((address) => isPrivateAddress(address))).toEqual([]);
  });

  it('refuses URLs to them, as the URL parser spells them too (decimal, hex, short forms), and names that resolve to them', async () => {
    for (const url of ['http://127.0.0.1:8080/hook', 'http://2130706433/', 'http://0x7f.1/', 'http://[::1]/', 'http://[::ffff:127.0.0.1]/', 'http://localhost/', 'http://api.localhost/', 'http://169.254.169.254/latest/meta-data/', 'http://10.0.0.5/']) {
      await expect(checkTarget(new URL(url), false), url).rejects.toBeInstanceOf(OutboundTargetError);
    }
    // A name is resolved, and judged by every address it has: this machine's own name resolves to its own addresses.
    const own = (await lookup(hostname(), { all: true })).map(({ address }) => address);
    if (own.some(isPrivateAddress)) await expect(checkTarget(new URL(`http://${hostname()}/`), false)).rejects.toThrow(/loopback, private/);
    await expect(checkTarget(new URL('http://no-such-host.invalid/'), false)).rejects.toThrow(/does not resolve/);
    await expect(checkTarget(new URL('ftp://example.com/'), true)).rejects.toThrow(/not http: or https:/);
    await expect(checkTarget(new URL('http://127.0.0.1:8080/hook'), true)).resolves.toBeUndefined();
    await expect(checkTarget(new URL('https://93.184.215.14/hook'), false)).resolves.toBeUndefined();
  });
});
