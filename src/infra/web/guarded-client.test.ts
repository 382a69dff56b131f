/**
 * The guarded client against real loopback servers. SSRF cases run with the loopback allowance
 * OFF and prove the target server never saw a request (`hits` stays empty); the reachable test
 * site lives on 127.0.0.2, opened by the exact-address allowance, so "redirect to 127.0.0.1" is a
 * real refused hop. Names are pointed anywhere through the resolver injection point.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { gzipSync } from 'node:zlib';
import { gzippedHtml, html, oversized, redirect, respond, slow, startWebServer, text, trickle, type FakeWebServer } from '../../../test/fakes/web-server';
import { createGuardedClient, type GuardedClient } from './guarded-client';
import type { Resolver } from './url-policy';

let site: FakeWebServer; // 127.0.0.2: reachable through allowAddresses
let secret: FakeWebServer; // 127.0.0.1: must never be reached with loopback off
let client: GuardedClient;
const BIG = 64 * 1024 * 1024; // more than loopback socket buffers can absorb
const big = oversized(BIG, false);

beforeAll(async () => {
  secret = await startWebServer({ host: '127.0.0.1', routes: { '/': text('internal admin panel'), '/secret': text('TOP SECRET') } });
  site = await startWebServer({
    host: '127.0.0.2',
    routes: {
      '/': html('<p>hello</p>'),
      '/host': (req, res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end(`host=${req.headers.host} ua=${req.headers['user-agent']}`),
      '/gz': gzippedHtml('<p>compressed page</p>'),
      '/bomb': respond(200, gzipSync(Buffer.alloc(4 * 1024 * 1024, 'z')), { 'content-type': 'text/plain', 'content-encoding': 'gzip' }),
      '/hop1': redirect('/hop2', 301),
      '/hop2': redirect('/', 307),
      '/loop': redirect('/loop'),
      '/to-decimal': redirect('http://2130706433/secret'),
      '/to-metadata': redirect('http://169.254.169.254/latest/meta-data/'),
      '/to-ftp': redirect('ftp://example.com/file'),
      '/post-303': (req, res) => {
        res.writeHead(303, { location: `/echo-method` }).end();
        req.resume();
      },
      '/echo-method': (req, res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end(req.method),
      '/declared-big': oversized(2 * 1024 * 1024, true),
      '/chunked-big': big,
      '/slow-headers': slow(3_000, text('finally')),
      '/slow-body': trickle(100),
      '/status-500': text('upstream broke', 500),
      '/status-404': text('nope', 404),
    },
  });
  site.route('/to-secret', redirect(`${secret.url}/secret`));
  client = createGuardedClient({ allowLoopback: false, allowAddresses: ['127.0.0.2'], maxRedirects: 5 });
});

afterAll(async () => {
  await client.close();
  await site.close();
  await secret.close();
});

describe('fetching', () => {
  test('returns status, headers, body, content type and final URL', async () => {
    const res = await client.fetch(`${site.url}/`);
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('<p>hello</p>');
    expect(res.contentType).toBe('text/html; charset=utf-8');
    expect(res.finalUrl).toBe(`${site.url}/`);
    expect(res.redirects).toBe(0);
  });

  test('sends the configured user agent and the original Host', async () => {
    const c = createGuardedClient({ allowLoopback: false, allowAddresses: ['127.0.0.2'], userAgent: 'svc-browse-test/1', allowedPorts: [site.port], resolver: async () => [{ address: '127.0.0.2', family: 4 }] });
    const res = await c.fetch(`http://pages.example.com:${site.port}/host`);
    expect(res.body.toString()).toBe(`host=pages.example.com:${site.port} ua=svc-browse-test/1`);
    await c.close();
  });

  test('tries the next checked address when one refuses the connection', async () => {
    const resolver: Resolver = async () => [{ address: '127.0.0.3', family: 4 }, { address: '127.0.0.2', family: 4 }];
    const c = createGuardedClient({ allowLoopback: false, allowAddresses: ['127.0.0.2', '127.0.0.3'], allowedPorts: [site.port], resolver });
    expect((await c.fetch(`http://two-addresses.example.com:${site.port}/`)).body.toString()).toBe('<p>hello</p>');
    await c.close();
  });

  test('decompresses gzip', async () => {
    const res = await client.fetch(`${site.url}/gz`);
    expect(res.body.toString()).toBe('<p>compressed page</p>');
  });

  test('returns non-2xx statuses instead of throwing', async () => {
    expect((await client.fetch(`${site.url}/status-404`)).status).toBe(404);
    expect((await client.fetch(`${site.url}/status-500`)).status).toBe(500);
  });
});

describe('redirects', () => {
  test('are followed, each hop counted', async () => {
    const res = await client.fetch(`${site.url}/hop1`);
    expect(res.status).toBe(200);
    expect(res.finalUrl).toBe(`${site.url}/`);
    expect(res.redirects).toBe(2);
  });

  test('303 after POST becomes GET', async () => {
    const res = await client.fetch(`${site.url}/post-303`, { method: 'POST', body: 'x=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.body.toString()).toBe('GET');
  });

  test('are not followed when asked (the renderer follows them itself)', async () => {
    const res = await client.fetch(`${site.url}/hop1`, { followRedirects: false });
    expect(res.status).toBe(301);
    expect(res.headers.location).toBe('/hop2');
  });

  test('stop after the maximum', async () => {
    await expect(client.fetch(`${site.url}/loop`)).rejects.toMatchObject({ code: 'BROWSE_PROVIDER_ERROR', reason: 'too_many_redirects' });
  });

  test.each(['/to-secret', '/to-decimal', '/to-metadata'])('a redirect to an internal address (%s) is refused', async (path) => {
    await expect(client.fetch(`${site.url}${path}`)).rejects.toMatchObject({ code: 'BROWSE_URL_BLOCKED', reason: 'redirect_blocked' });
    expect(secret.hits).toEqual([]);
  });

  test('a redirect to another scheme is refused', async () => {
    await expect(client.fetch(`${site.url}/to-ftp`)).rejects.toMatchObject({ code: 'BROWSE_URL_BLOCKED' });
  });
});

describe('limits', () => {
  test('a declared Content-Length over the cap is refused before reading', async () => {
    await expect(client.fetch(`${site.url}/declared-big`, { maxBytes: 1024 * 1024 })).rejects.toMatchObject({ code: 'BROWSE_RESPONSE_TOO_LARGE' });
  });

  test('a chunked body is cut off past the cap', async () => {
    await expect(client.fetch(`${site.url}/chunked-big`, { maxBytes: 256 * 1024 })).rejects.toMatchObject({ code: 'BROWSE_RESPONSE_TOO_LARGE' });
    // Aborted early: the server could not push the whole body (socket buffers allow some slack).
    await new Promise((r) => setTimeout(r, 100));
    expect(big.sent()).toBeLessThan(BIG / 2);
  });

  test('the cap applies to the decompressed size (gzip bomb)', async () => {
    await expect(client.fetch(`${site.url}/bomb`, { maxBytes: 1024 * 1024 })).rejects.toMatchObject({ code: 'BROWSE_RESPONSE_TOO_LARGE' });
  });

  test('truncate mode keeps the first bytes', async () => {
    const res = await client.fetch(`${site.url}/declared-big`, { maxBytes: 1000, onOversize: 'truncate' });
    expect(res.body.length).toBe(1000);
    expect(res.truncated).toBe(true);
  });

  test('slow headers hit the total time limit', async () => {
    const t0 = performance.now();
    await expect(client.fetch(`${site.url}/slow-headers`, { timeoutMs: 300 })).rejects.toMatchObject({ code: 'BROWSE_PROVIDER_TIMEOUT' });
    expect(performance.now() - t0).toBeLessThan(2_000);
  });

  test('a body that never ends hits the total time limit', async () => {
    await expect(client.fetch(`${site.url}/slow-body`, { timeoutMs: 400 })).rejects.toMatchObject({ code: 'BROWSE_PROVIDER_TIMEOUT' });
  });
});

describe('upstream failures', () => {
  test('connection refused', async () => {
    const c = createGuardedClient({ allowLoopback: true });
    await expect(c.fetch('http://127.0.0.1:1/')).rejects.toMatchObject({ code: 'BROWSE_PROVIDER_ERROR', reason: 'connection_failed' });
    await c.close();
  });

  test('DNS failure', async () => {
    const resolver: Resolver = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    const c = createGuardedClient({ allowLoopback: false, resolver });
    await expect(c.fetch('http://no-such-host.example.com/')).rejects.toMatchObject({ code: 'BROWSE_PROVIDER_ERROR', reason: 'dns_failure' });
    await c.close();
  });
});

describe('SSRF with the loopback allowance off', () => {
  // Every spelling of the live 127.0.0.1 server; the port is allowed so only the address decides.
  const spellings = (port: number) => [
    `http://127.0.0.1:${port}/secret`,
    `http://localhost:${port}/secret`,
    `http://2130706433:${port}/secret`,
    `http://0177.0.0.1:${port}/secret`,
    `http://0x7f.1:${port}/secret`,
    `http://127.1:${port}/secret`,
    `http://[::1]:${port}/secret`,
    `http://[::ffff:127.0.0.1]:${port}/secret`,
    `http://[::ffff:7f00:1]:${port}/secret`,
    `http://0.0.0.0:${port}/secret`,
    `http://0:${port}/secret`,
  ];

  test('no spelling of loopback reaches the server', async () => {
    const c = createGuardedClient({ allowLoopback: false, allowedPorts: [secret.port] });
    for (const url of spellings(secret.port)) {
      await expect(c.fetch(url), url).rejects.toMatchObject({ code: 'BROWSE_URL_BLOCKED' });
    }
    expect(secret.hits).toEqual([]);
    await c.close();
  });

  test.each([
    ['a private address', ['10.0.0.5']],
    ['loopback', ['127.0.0.1']],
    ['the metadata address', ['169.254.169.254']],
    ['an IPv4-mapped loopback', ['::ffff:127.0.0.1']],
    ['a NAT64 address', ['64:ff9b::7f00:1']],
    ['a ULA', ['fd00::1']],
    ['a mix of public and private answers', ['93.184.216.34', '127.0.0.1']],
  ])('a host name that resolves to %s is refused at connect time', async (_label, addresses) => {
    const resolver: Resolver = async () => addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    const c = createGuardedClient({ allowLoopback: false, resolver, allowedPorts: [secret.port] });
    await expect(c.fetch(`http://innocent.example.com:${secret.port}/secret`)).rejects.toMatchObject({ code: 'BROWSE_URL_BLOCKED', reason: 'address_not_allowed' });
    expect(secret.hits).toEqual([]);
    await c.close();
  });

  test('DNS rebinding: public at validation, loopback at connect, is refused', async () => {
    let calls = 0;
    const resolver: Resolver = async () => (calls++ === 0 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]);
    const c = createGuardedClient({ allowLoopback: false, resolver, allowedPorts: [secret.port] });
    const url = `http://rebind.example.com:${secret.port}/secret`;
    await expect(c.validatePublicUrl(url)).resolves.toBeInstanceOf(URL);
    await expect(c.fetch(url)).rejects.toMatchObject({ code: 'BROWSE_URL_BLOCKED' });
    expect(calls).toBe(2);
    expect(secret.hits).toEqual([]);
    await c.close();
  });

  test('resolve: the host of a checked URL resolved with every answer checked, as validatePublicUrl does', async () => {
    const answers: Record<string, string[]> = { 'ok.example.com': ['93.184.216.34'], 'mixed.example.com': ['93.184.216.34', '10.0.0.5'], 'meta.example.com': ['169.254.169.254'] };
    const resolver: Resolver = async (host) => {
      if (!answers[host]) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      return answers[host].map((address) => ({ address, family: 4 as const }));
    };
    const c = createGuardedClient({ allowLoopback: false, resolver });
    await expect(c.resolve(c.checkUrl('https://ok.example.com/a'))).resolves.toBeUndefined();
    await expect(c.resolve(c.checkUrl('https://mixed.example.com/a'))).rejects.toMatchObject({ code: 'BROWSE_URL_BLOCKED', reason: 'address_not_allowed' });
    await expect(c.resolve(c.checkUrl('https://meta.example.com/a'))).rejects.toMatchObject({ code: 'BROWSE_URL_BLOCKED', reason: 'address_not_allowed' });
    await expect(c.resolve(c.checkUrl('https://gone.example.com/a'))).rejects.toMatchObject({ code: 'BROWSE_PROVIDER_ERROR', reason: 'dns_failure' });
    // A URL object that never went through checkUrl is still judged by its host.
    await expect(c.resolve(new URL('http://localhost/'))).rejects.toMatchObject({ code: 'BROWSE_URL_BLOCKED', reason: 'host_not_allowed' });
    await expect(c.resolve(new URL('http://127.0.0.1/'))).rejects.toMatchObject({ code: 'BROWSE_URL_BLOCKED' });
    await c.close();
  });

  test('a redirect to a name that rebinds to loopback at connect is a refused redirect (redirect_blocked)', async () => {
    const hop = await startWebServer({ host: '127.0.0.2', routes: { '/go': redirect(`http://rebind2.example.com:${secret.port}/secret`) } });
    const resolver: Resolver = async (host) => (host === 'rebind2.example.com' ? [{ address: '127.0.0.1', family: 4 }] : [{ address: host, family: 4 }]);
    // The redirect's name passes the hop's syntax check (a name, not an address); the connect-time
    // check then refuses the loopback answer.
    const c = createGuardedClient({ allowLoopback: false, allowAddresses: ['127.0.0.2'], resolver, allowedPorts: [hop.port, secret.port] });
    await expect(c.fetch(`${hop.url}/go`)).rejects.toMatchObject({ code: 'BROWSE_URL_BLOCKED', reason: 'redirect_blocked' });
    expect(secret.hits).toEqual([]);
    await c.close();
    await hop.close();
  });

  test('the same server is reachable once loopback is allowed (the refusals above are the policy, not the network)', async () => {
    const c = createGuardedClient({ allowLoopback: true });
    const res = await c.fetch(`${secret.url}/secret`);
    expect(res.body.toString()).toBe('TOP SECRET');
    secret.hits.length = 0;
    await c.close();
  });
});
