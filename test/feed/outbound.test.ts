/** Where webhooks may not go: loopback, private, link-local and reserved addresses, however written. */
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { checkTarget, isPrivateAddress, OutboundTargetError } from '../../src/base/outbound.js';

describe('outbound targets', () => {
  it('tells private addresses from public ones, in every form an address takes', () => {
    const private_ = [
      '127.0.0.1',
      '127.1.2.3',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '0.0.0.0',
      '100.64.0.1',
      '198.18.0.1',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fe80::1%eth0',
      'fc00::1',
      'fd12:3456::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:169.254.169.254',
      '64:ff9b::10.0.0.1',
      'ff02::1',
      '2001:db8::1',
      'not an address',
    ];
    const public_ = ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '2001:4860:4860::8888', '64:ff9b::8.8.8.8'];
    expect(private_.filter((address) => !isPrivateAddress(address))).toEqual([]);
    expect(public_.filter((address) => isPrivateAddress(address))).toEqual([]);
  });

  // Each form, with what it embeds: the form is judged by that IPv4 address, so 8.8.8.8 inside a form
  // that is otherwise public stays public. Teredo is judged by its server's address and its
  // client's (stored with every bit flipped); local-use NAT64 is local whatever it embeds.
  it.each([
    ['IPv4-compatible', ['::127.0.0.1', '::7f00:1', '::a9fe:a9fe', '::10.0.0.1'], ['::8.8.8.8']],
    ['IPv4-mapped', ['::ffff:127.0.0.1', '::ffff:a9fe:a9fe'], ['::ffff:8.8.8.8']],
    ['IPv4-translated (RFC 2765)', ['::ffff:0:127.0.0.1', '::ffff:0:7f00:1', '::ffff:0:a9fe:a9fe'], ['::ffff:0:8.8.8.8']],
    ['NAT64 (RFC 6052)', ['64:ff9b::7f00:1', '64:ff9b::169.254.169.254'], ['64:ff9b::808:808']],
    ['local-use NAT64 (RFC 8215), and the rest of 64:ff9b::/32', ['64:ff9b:1::8.8.8.8', '64:ff9b:1:ffff::1', '64:ff9b::1:808:808'], []],
    ['6to4 (RFC 3056)', ['2002:7f00:1::', '2002:a9fe:a9fe::1', '2002:a00:1:5::1'], ['2002:808:808::1']],
    [
      'Teredo (RFC 4380)',
      ['2001:0:a00:1:0:0:f7f7:f7f7', '2001:0:4136:e378:8000:63bf:f5ff:fffe', '2001::4136:e378:8000:63bf:80ff:fffe'],
      ['2001:0:4136:e378:8000:63bf:f7f7:f7f7'],
    ],
    [
      'ISATAP (RFC 5214)',
      ['2606:4700::5efe:10.0.0.1', '2606:4700::200:5efe:a9fe:a9fe', '2606:4700:1::100:5efe:7f00:1', 'fe80::5efe:8.8.8.8'],
      ['2606:4700::200:5efe:808:808'],
    ],
  ])('tells private from public %s addresses by the IPv4 address they embed', (_, private_, public_) => {
    expect(private_.filter((address) => !isPrivateAddress(address))).toEqual([]);
    expect(public_.filter((address) => isPrivateAddress(address))).toEqual([]);
  });

  it('refuses URLs to them, as the URL parser spells them too (decimal, hex, short forms), and names that resolve to them', async () => {
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://2130706433/',
      'http://0x7f.1/',
      'http://[::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::127.0.0.1]/',
      'http://[::ffff:0:127.0.0.1]/',
      'http://[2002:7f00:1::]/',
      'http://[64:ff9b::169.254.169.254]/',
      'http://[2606:4700::5efe:10.0.0.1]/',
      'http://localhost/',
      'http://api.localhost/',
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.5/',
    ]) {
      await expect(checkTarget(new URL(url), false), url).rejects.toBeInstanceOf(OutboundTargetError);
    }
    // A name is resolved, and judged by every address it has: this machine's own name resolves to its own addresses.
    const own = (await lookup(hostname(), { all: true })).map(({ address }) => address);
    if (own.some(isPrivateAddress)) await expect(checkTarget(new URL(`http://${hostname()}/`), false)).rejects.toThrow(/loopback, private/);
    await expect(checkTarget(new URL('http://no-such-host.invalid/'), false)).rejects.toThrow(/does not resolve/);
    await expect(checkTarget(new URL('ftp://example.com/'), true)).rejects.toThrow(/not http: or https:/);
    await expect(checkTarget(new URL('http://127.0.0.1:8080/hook'), true)).resolves.toBeUndefined();
    await expect(checkTarget(new URL('https://93.184.215.14/hook'), false)).resolves.toBeUndefined();
    // The parser writes an embedded IPv4 address in hex: that is the form checked.
    expect(new URL('http://[::127.0.0.1]/').hostname).toBe('[::7f00:1]');
    await expect(checkTarget(new URL('http://[2002:808:808::1]/hook'), false)).resolves.toBeUndefined();
  });
});
