import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { html, startWebServer, text, type FakeWebServer } from './fakes/web-server';
import { startWebApp, type WebApp } from './search-support';

/**
 * SSRF suite: the loopback allowance is OFF (production setting). Every way of naming an internal
 * address is refused with 422 BROWSE_URL_BLOCKED before anything is fetched or charged; a real
 * loopback server proves no request arrived. Chromium is switched off here, so dynamic mode is 503.
 */
let site: FakeWebServer;
let w: WebApp;
beforeAll(async () => {
  site = await startWebServer({ routes: { '/robots.txt': text('User-agent: *\nAllow: /\n'), '/secret': html('<p>internal admin page</p>') } });
  w = await startWebApp({ SVC_OUTBOUND_ALLOW_LOOPBACK: 'false', SVC_CHROMIUM_PATH: 'none' });
});
afterAll(async () => {
  await w?.close();
  await site?.close();
});

const browse = (token: string, url: string, mode = 'static') => w.request('POST', '/v1/browse', { token, body: { url, mode } });

describe('SSRF refusals (SVC_OUTBOUND_ALLOW_LOOPBACK=false)', () => {
  test('every spelling of loopback, private, link-local, CGNAT, multicast, unspecified and metadata addresses is refused', async () => {
    const a = await w.agent('free', { createdAgoMs: 3 * 86_400_000 });
    const p = site.port;
    const urls = [
      `http://127.0.0.1:${p}/secret`, `http://localhost:${p}/secret`, `http://LOCALHOST.:${p}/secret`, `http://[::1]:${p}/secret`,
      `http://2130706433:${p}/secret`, `http://0177.0.0.1:${p}/secret`, `http://0x7f.0.0.1:${p}/secret`, `http://0x7f000001:${p}/secret`,
      `http://127.1:${p}/secret`, `http://[::ffff:127.0.0.1]:${p}/secret`, `http://[::ffff:7f00:1]:${p}/secret`, `http://[0:0:0:0:0:0:0:1]:${p}/secret`,
      'http://169.254.169.254/latest/meta-data/', 'http://[fd00:ec2::254]/latest/meta-data/', 'http://metadata.google.internal/computeMetadata/v1/',
      'http://10.0.0.1/', 'http://172.16.5.4/', 'http://192.168.1.1/', 'http://100.64.0.1/', 'http://224.0.0.1/', 'http://0.0.0.0/',
      'http://[::]/', 'http://[fe80::1]/', 'http://[fc00::1]/', 'http://[64:ff9b::7f00:1]/', 'http://[2002:7f00:1::]/',
      'http://intranet/', 'http://printer.local/', 'http://example.com:22/',
    ];
    for (const url of urls) {
      const res = await browse(a.token, url);
      expect([res.status, res.body.error_code], url).toEqual([422, 'BROWSE_URL_BLOCKED']);
      const dyn = await browse(a.token, url, 'dynamic');
      expect(dyn.status, `dynamic ${url}`).toBe(422);
    }
    expect(site.hits).toEqual([]);
    const usage = await w.request('GET', '/v1/usage', { token: a.token });
    expect(usage.body.pools.browse.calls_this_month).toBe(0);
  });

  test('credentials in the URL are refused; bad schemes are INVALID_URL', async () => {
    const a = await w.agent();
    expect((await browse(a.token, 'http://user:pass@example.com/')).body.error_code).toBe('BROWSE_URL_BLOCKED');
    for (const url of ['file:///etc/passwd', 'gopher://example.com/', 'data:text/html,hi', 'ws://example.com/']) {
      expect((await browse(a.token, url)).body.error_code, url).toBe('INVALID_URL');
    }
  });

  test('dynamic mode without a Chromium: 503 BROWSE_PROVIDER_UNCONFIGURED (after the URL and trust checks), nothing charged', async () => {
    const a = await w.agent('free', { createdAgoMs: 3 * 86_400_000 });
    const res = await browse(a.token, 'https://example.com/', 'dynamic');
    expect(res.status).toBe(503);
    expect(res.body.error_code).toBe('BROWSE_PROVIDER_UNCONFIGURED');
    const fresh = await w.agent();
    expect((await browse(fresh.token, 'https://example.com/', 'dynamic')).body.error_code).toBe('BROWSE_DYNAMIC_TRUST_TIER');
    expect((await w.request('GET', '/v1/usage', { token: a.token })).body.pools.browse.calls_this_month).toBe(0);
  });
});
