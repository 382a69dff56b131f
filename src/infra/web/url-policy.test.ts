/**
 * The address policy without network: every SSRF spelling refused at URL validation time with
 * the loopback allowance OFF, public addresses allowed, scheme/port/credential rules.
 * (guarded-client.test.ts proves the same forms never reach a listening server.)
 */
import { describe, expect, test } from 'vitest';
import { addressProblem } from './address-policy';
import { WebError } from './errors';
import { checkUrl, validatePublicUrl, type Resolver } from './url-policy';

const off = { allowLoopback: false };

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(WebError);
    return (err as WebError).code;
  }
  return 'ALLOWED';
}

export const BLOCKED_URLS = [
  'http://127.0.0.1/',
  'http://127.8.9.10/',
  'http://localhost/',
  'http://LOCALHOST./',
  'http://api.localhost/',
  'http://2130706433/', // decimal 127.0.0.1
  'http://0177.0.0.1/', // octal
  'http://0x7f.1/', // hex, short form
  'http://0x7f000001/',
  'http://127.1/', // short form
  'http://%31%32%37.0.0.1/', // percent-encoded
  'http://127.0.0.1./', // trailing dot
  'http://0/',
  'http://0.0.0.0/',
  'http://[::1]/',
  'http://[::]/',
  'http://[0:0:0:0:0:0:0:1]/',
  'http://[::ffff:127.0.0.1]/', // IPv4-mapped
  'http://[::ffff:7f00:1]/',
  'http://[::ffff:169.254.169.254]/',
  'http://[::127.0.0.1]/', // IPv4-compatible
  'http://[64:ff9b::7f00:1]/', // NAT64 of 127.0.0.1
  'http://[64:ff9b::a9fe:a9fe]/', // NAT64 of 169.254.169.254
  'http://[64:ff9b:1::a00:1]/', // local-use NAT64
  'http://[2002:7f00:1::1]/', // 6to4 embedding 127.0.0.1
  'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', // Teredo
  'http://10.0.0.1/',
  'http://10.255.255.255/',
  'http://172.16.0.1/',
  'http://172.31.255.254/',
  'http://192.168.1.1/',
  'http://100.64.0.1/', // CGNAT
  'http://100.127.255.254/',
  'http://169.254.0.1/', // link-local
  'http://169.254.169.254/latest/meta-data/', // AWS/GCP/Azure metadata
  'http://[fd00:ec2::254]/', // AWS IPv6 metadata
  'http://100.100.100.200/', // Alibaba metadata
  'http://metadata.google.internal/computeMetadata/v1/',
  'http://metadata.google.internal./',
  'http://instance-data/',
  'http://printer.local/',
  'http://db.internal/',
  'http://intranet/', // single label: search domains
  'http://224.0.0.1/', // multicast
  'http://239.255.255.250/',
  'http://255.255.255.255/', // broadcast
  'http://240.0.0.1/', // reserved
  'http://192.0.0.8/',
  'http://192.0.2.10/', // documentation
  'http://198.18.0.1/', // benchmarking
  'http://[fe80::1]/', // IPv6 link-local
  'http://[fc00::1]/', // ULA
  'http://[fd12:3456::1]/',
  'http://[ff02::1]/', // IPv6 multicast
  'http://[fec0::1]/', // site-local
  'http://[2001:db8::1]/', // documentation
  'http://[100::1]/', // discard
  'http://user:secret@example.com/', // credentials
  'http://example.com:22/', // ports
  'http://example.com:6379/',
  'https://example.com:2375/',
  'http://example.com:0/',
];

describe('checkUrl with the loopback allowance off', () => {
  test.each(BLOCKED_URLS)('%s is BROWSE_URL_BLOCKED', (url) => {
    expect(codeOf(() => checkUrl(url, off))).toBe('BROWSE_URL_BLOCKED');
  });

  test.each([
    'http://example.com/',
    'https://example.com/path?q=1#frag',
    'http://93.184.216.34/',
    'http://8.8.8.8:8080/',
    'https://1.1.1.1:8443/',
    'http://172.32.0.1/', // just past 172.16/12
    'http://100.128.0.1/', // just past 100.64/10
    'http://169.255.0.1/',
    'http://[2606:4700:4700::1111]/',
    'http://xn--bcher-kva.example/',
  ])('%s is allowed', (url) => {
    expect(codeOf(() => checkUrl(url, off))).toBe('ALLOWED');
  });

  test.each([undefined, null, 42, '', '   ', 'not a url', 'example.com', 'ftp://example.com/', 'file:///etc/passwd', 'javascript:alert(1)', 'data:text/html,hi', 'gopher://example.com/', 'ws://example.com/', 'http://', 'http://[fe80::1%25eth0]/', `http://example.com/${'a'.repeat(9000)}`])(
    '%s is INVALID_URL',
    (url) => {
      expect(codeOf(() => checkUrl(url, off))).toBe('INVALID_URL');
    },
  );

  test('the fragment is dropped and the reason is precise', () => {
    expect(checkUrl('https://example.com/a#b', off).href).toBe('https://example.com/a');
    const err = (() => {
      try {
        checkUrl('http://0x7f.1/', off);
      } catch (e) {
        return e as WebError;
      }
    })();
    expect(err?.reason).toBe('address_not_allowed');
    expect(err?.message).toMatch(/loopback/);
  });
});

describe('HTTPS-only validation (callback_url, agent_card_url)', () => {
  test('plain http is refused as INVALID_URL', () => {
    expect(codeOf(() => checkUrl('http://example.com/hook', { ...off, httpsOnly: true }))).toBe('INVALID_URL');
    expect(codeOf(() => checkUrl('https://example.com/hook', { ...off, httpsOnly: true }))).toBe('ALLOWED');
  });

  test('validatePublicUrl resolves and checks every answer', async () => {
    const resolver: Resolver = async (host) =>
      host === 'hooks.example.com' ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '93.184.216.34', family: 4 }, { address: '10.1.2.3', family: 4 }];
    await expect(validatePublicUrl('https://hooks.example.com/cb', { ...off, httpsOnly: true, resolver })).resolves.toBeInstanceOf(URL);
    await expect(validatePublicUrl('https://mixed.example.com/cb', { ...off, httpsOnly: true, resolver })).rejects.toMatchObject({ code: 'BROWSE_URL_BLOCKED' });
    await expect(validatePublicUrl('http://hooks.example.com/cb', { ...off, httpsOnly: true, resolver })).rejects.toMatchObject({ code: 'INVALID_URL' });
    const failing: Resolver = async () => {
      throw Object.assign(new Error('nope'), { code: 'ENOTFOUND' });
    };
    await expect(validatePublicUrl('https://gone.example.com/', { ...off, resolver: failing })).rejects.toMatchObject({ code: 'BROWSE_PROVIDER_ERROR', reason: 'dns_failure' });
  });
});

describe('loopback allowance and explicit addresses', () => {
  test('allowLoopback opens 127/8, ::1 and localhost (any port) but nothing else', () => {
    const on = { allowLoopback: true };
    for (const url of ['http://127.0.0.1:45678/', 'http://localhost:3000/', 'http://[::1]:8081/', 'http://127.1/']) {
      expect(codeOf(() => checkUrl(url, on))).toBe('ALLOWED');
    }
    for (const url of ['http://10.0.0.1/', 'http://[::ffff:127.0.0.1]/', 'http://169.254.169.254/', 'http://0.0.0.0/', 'http://example.com:22/']) {
      expect(codeOf(() => checkUrl(url, on))).toBe('BROWSE_URL_BLOCKED');
    }
  });

  test('allowAddresses opens exactly the listed address', () => {
    const opts = { allowLoopback: false, allowAddresses: ['127.0.0.2'] };
    expect(addressProblem('127.0.0.2', opts)).toBeNull();
    expect(addressProblem('127.0.0.1', opts)).toBe('loopback address');
    expect(codeOf(() => checkUrl('http://127.0.0.2:40000/', opts))).toBe('ALLOWED');
    expect(codeOf(() => checkUrl('http://127.0.0.1:40000/', opts))).toBe('BROWSE_URL_BLOCKED');
  });

  test('addresses as resolvers return them are classified', () => {
    expect(addressProblem('::ffff:10.0.0.1', off)).toBe('IPv4-mapped IPv6 address');
    expect(addressProblem('169.254.169.254', off)).toBe('cloud metadata address');
    expect(addressProblem('fd00:ec2::254', off)).toBe('cloud metadata address');
    expect(addressProblem('fe80::1%eth0', off)).toBe('zone-scoped IPv6 address');
    expect(addressProblem('2a00:1450::1%eth0', off)).toBe('zone-scoped IPv6 address');
    expect(addressProblem('evil.example', off)).toBe('not a plain IP address');
    expect(addressProblem('8.8.4.4', off)).toBeNull();
    expect(addressProblem('2a00:1450:4001:81b::200e', off)).toBeNull();
  });
});
