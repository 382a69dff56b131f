/**
 * Dynamic rendering with the real Debian Chromium. The test site lives on 127.0.0.2 (allowed by
 * exact address); 127.0.0.1 hosts a "secret" server that must never be reached, because the
 * loopback allowance is OFF. One browser is shared by the whole file.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { html, redirect, respond, slow, startWebServer, text, type FakeWebServer } from '../../../test/fakes/web-server';
import { extractContent } from '../web/extract';
import { createGuardedClient, type GuardedClient } from '../web/guarded-client';
import { createBrowserHost, resolveChromiumPath, type BrowserHost } from './chromium';
import { createRenderer, type Renderer } from './renderer';

const chromiumPath = resolveChromiumPath(process.env.SVC_CHROMIUM_PATH);
if (!chromiumPath) console.warn('renderer.test.ts: no Chromium found (install the Debian package `chromium` or set SVC_CHROMIUM_PATH); dynamic rendering tests are SKIPPED.');

const JS_TEXT = 'This paragraph does not exist in the HTML that the server sent; a script wrote it after the page loaded.';

function makeRenderer(host: BrowserHost, client: GuardedClient, over: Partial<Parameters<typeof createRenderer>[0]> = {}): Renderer {
  return createRenderer({
    host,
    client,
    extract: async (input) => extractContent(input),
    timeoutMs: 15_000,
    maxBytes: 2 * 1024 * 1024,
    maxTotalBytes: 8 * 1024 * 1024,
    concurrency: 2,
    settleMs: 500,
    ...over,
  });
}

test('without a Chromium the renderer answers BROWSE_PROVIDER_UNCONFIGURED', async () => {
  const client = createGuardedClient({ allowLoopback: false });
  const r = makeRenderer(createBrowserHost({ executablePath: undefined }), client);
  expect(r.configured).toBe(false);
  await expect(r.render('https://example.com/')).rejects.toMatchObject({ code: 'BROWSE_PROVIDER_UNCONFIGURED' });
  const missing = makeRenderer(createBrowserHost({ executablePath: '/nonexistent/chromium' }), client);
  await expect(missing.render('https://example.com/')).rejects.toMatchObject({ code: 'BROWSE_PROVIDER_UNCONFIGURED' });
  expect(resolveChromiumPath('none')).toBeUndefined();
  await client.close();
});

describe.skipIf(!chromiumPath)('dynamic rendering in Chromium', () => {
  let site: FakeWebServer;
  let secret: FakeWebServer;
  let client: GuardedClient;
  let host: BrowserHost;
  let renderer: Renderer;

  beforeAll(async () => {
    secret = await startWebServer({ host: '127.0.0.1', routes: { '/secret': text('TOP SECRET') } });
    site = await startWebServer({
      host: '127.0.0.2',
      routes: {
        '/js': html(`<!doctype html><html><head><title>Written by script</title></head><body><main><h1>Dynamic</h1><div id="app">Loading…</div></main>
          <script>setTimeout(() => { document.getElementById('app').innerHTML = '<p>${JS_TEXT}</p>'; }, 50);</script></body></html>`),
        '/fetches': html(`<!doctype html><html><head><title>Fetches</title></head><body><p id="a">waiting</p><p id="s">waiting</p>
          <img src="http://169.254.169.254/latest/meta-data/iam">
          <script>
            fetch('/api/data').then(r => r.json()).then(d => { document.getElementById('a').textContent = 'API says: ' + d.message; });
            fetch('${secret.url}/secret').then(r => r.text()).then(t => { document.getElementById('s').textContent = 'LEAKED ' + t; }, () => { document.getElementById('s').textContent = 'The secret request failed.'; });
          </script></body></html>`),
        '/api/data': respond(200, JSON.stringify({ message: 'hello from the same origin' }), { 'content-type': 'application/json' }),
        '/moved': redirect('/js', 302),
        '/to-secret': redirect(`${secret.url}/secret`),
        '/paper.pdf': respond(200, '%PDF-1.4 fake', { 'content-type': 'application/pdf' }),
        '/plain': text('Just text.\nTwo lines.'),
        '/slow': slow(8_000, html('<p>too late</p>')),
      },
    });
    client = createGuardedClient({ allowLoopback: false, allowAddresses: ['127.0.0.2'] });
    host = createBrowserHost({ executablePath: chromiumPath });
    renderer = makeRenderer(host, client);
  });

  afterAll(async () => {
    await renderer?.close();
    await client?.close();
    await site?.close();
    await secret?.close();
  });

  test('returns text that JavaScript wrote into the page', async () => {
    const res = await renderer.render(`${site.url}/js`);
    expect(res.status).toBe(200);
    expect(res.finalUrl).toBe(`${site.url}/js`);
    expect(res.contentType).toMatch(/^text\/html/);
    expect(res.title).toBe('Written by script');
    expect(res.text).toContain(JS_TEXT);
    expect(res.text).not.toContain('Loading…');
    expect(res.html).toContain(JS_TEXT);
  });

  test('same-origin requests work; requests to blocked addresses are aborted and never arrive', async () => {
    const res = await renderer.render(`${site.url}/fetches`);
    expect(res.text).toContain('API says: hello from the same origin');
    expect(res.text).toContain('The secret request failed.');
    expect(res.text).not.toContain('LEAKED');
    expect(res.blocked).toEqual(expect.arrayContaining([`${secret.url}/secret`, 'http://169.254.169.254/latest/meta-data/iam']));
    expect(secret.hits).toEqual([]);
    expect(host.escapes()).toBe(0); // nothing went around the route handler
  });

  test('follows a main-document redirect and reports the final URL', async () => {
    const res = await renderer.render(`${site.url}/moved`);
    expect(res.finalUrl).toBe(`${site.url}/js`);
    expect(res.text).toContain(JS_TEXT);
  });

  test('refuses a redirect to a blocked address', async () => {
    await expect(renderer.render(`${site.url}/to-secret`)).rejects.toMatchObject({ code: 'BROWSE_URL_BLOCKED' });
    expect(secret.hits).toEqual([]);
  });

  test('refuses blocked and invalid URLs before opening a page', async () => {
    await expect(renderer.render(`${secret.url}/secret`)).rejects.toMatchObject({ code: 'BROWSE_URL_BLOCKED' });
    await expect(renderer.render('file:///etc/passwd')).rejects.toMatchObject({ code: 'INVALID_URL' });
    expect(secret.hits).toEqual([]);
  });

  test('refuses a PDF', async () => {
    await expect(renderer.render(`${site.url}/paper.pdf`)).rejects.toMatchObject({ code: 'BROWSE_PROVIDER_ERROR', reason: 'unsupported_content_type' });
  });

  test('passes plain text through', async () => {
    const res = await renderer.render(`${site.url}/plain`);
    expect(res.text).toBe('Just text.\nTwo lines.');
  });

  test('a page slower than the time limit is BROWSE_PROVIDER_TIMEOUT', async () => {
    const t0 = performance.now();
    await expect(renderer.render(`${site.url}/slow`, { timeoutMs: 1_500 })).rejects.toMatchObject({ code: 'BROWSE_PROVIDER_TIMEOUT' });
    expect(performance.now() - t0).toBeLessThan(5_000);
  });

  test('a response over the byte limit is BROWSE_RESPONSE_TOO_LARGE', async () => {
    site.route('/huge', html(`<p>${'x'.repeat(300 * 1024)}</p>`));
    const small = makeRenderer(host, client, { maxBytes: 100 * 1024 });
    await expect(small.render(`${site.url}/huge`)).rejects.toMatchObject({ code: 'BROWSE_RESPONSE_TOO_LARGE' });
  });

  test('starts a new browser after the old one died', async () => {
    const browser = await host.browser();
    await browser.close(); // as if Chromium had crashed
    const res = await renderer.render(`${site.url}/js`);
    expect(res.text).toContain(JS_TEXT);
    expect(await host.browser()).not.toBe(browser);
  });
});
