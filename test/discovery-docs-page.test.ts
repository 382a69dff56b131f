/**
 * The API reference (GET /docs, Swagger UI served from the npm package) and the designs page
 * (GET /docs/designs): over real HTTP, every asset the page references is served by svc itself from
 * its own origin, nothing names a CDN, the page's policy allows its own origin only, and in headless
 * Chromium the page renders the document (operations, error codes, authentication, examples)
 * without a request to any other origin.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { testEngine } from './helpers/engines';
import { startTestApp, type TestApp } from './helpers/harness';

// The pages do not depend on the database engine: run them once (SQLite project).
const describeOnce = testEngine() === 'sqlite' ? describe : describe.skip;
const chromiumPath = process.env.SVC_CHROMIUM_PATH ?? '/usr/bin/chromium';

let t: TestApp;
beforeAll(async () => {
  if (testEngine() !== 'sqlite') return;
  t = await startTestApp({ listen: true });
});
afterAll(async () => t?.close());

/** The URLs an HTML page or a stylesheet references (src, href, CSS url() and @import). */
function referencesOf(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/\s(?:src|href)\s*=\s*["']([^"']+)["']/g)) out.push(m[1]);
  for (const m of text.matchAll(/url\(\s*["']?([^"')]+)["']?\s*\)/g)) out.push(m[1]);
  for (const m of text.matchAll(/@import\s+["']([^"']+)["']/g)) out.push(m[1]);
  return out;
}

// Hosts a page would load code, styles or fonts from. (The bundle names validator.swagger.io as its default
// validator; the page's configuration turns it off: next test.)
const CDN = /unpkg\.com|jsdelivr|cdnjs|googleapis|gstatic|fonts\.scalar|\/\/cdn\./i;
const cdnIn = (text: string) => CDN.exec(text)?.[0] ?? null;

describeOnce('GET /docs: the reference page, served from this instance', () => {
  test('every asset it references (and theirs) is on its own origin and served; none names a CDN', async () => {
    const origin = new URL(t.url).origin;
    const seen = new Map<string, { status: number; type: string }>();
    const queue = [`${t.url}/docs`];
    while (queue.length) {
      const url = queue.shift()!;
      if (seen.has(url)) continue;
      const res = await fetch(url, { redirect: 'manual' });
      const text = await res.text();
      const type = res.headers.get('content-type') ?? '';
      seen.set(url, { status: res.status, type });
      expect(res.status, url).toBe(200);
      expect(cdnIn(text), url).toBeNull();
      if (!/html|css/.test(type)) continue;
      for (const ref of referencesOf(text)) {
        if (ref.startsWith('data:') || ref.startsWith('#')) continue;
        const abs = new URL(ref, url);
        expect(abs.origin, `${ref} in ${url}`).toBe(origin);
        queue.push(abs.href);
      }
    }
    const paths = [...seen.keys()].map((u) => new URL(u).pathname);
    // The page, its stylesheets and scripts, including the one that points the UI at the document.
    expect(paths).toEqual(expect.arrayContaining(['/docs', '/docs/static/swagger-ui.css', '/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-initializer.js']));
    expect(seen.get(`${t.url}/docs`)!.type).toContain('text/html');
    expect(seen.get(`${t.url}/docs/static/swagger-ui-bundle.js`)!.type).toContain('javascript');
  });

  test('the UI reads the same document as /openapi.json, with no validator badge (it would send the document elsewhere)', async () => {
    const init = await (await fetch(`${t.url}/docs/static/swagger-initializer.js`)).text();
    expect(init).toContain('validatorUrl: null');
    expect(init).toContain("url: resolveUrl('./json')");
    const shown = await (await fetch(`${t.url}/docs/json`)).json();
    const doc = await (await fetch(`${t.url}/openapi.json`)).json();
    expect(shown).toEqual(doc);
  });

  test('its policy allows its own origin (and the API base address) only; the page is public', async () => {
    for (const path of ['/docs', '/docs/static/swagger-ui-bundle.js', '/docs/designs']) {
      const res = await fetch(`${t.url}${path}`);
      expect(res.status, path).toBe(200);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp, path).toContain("default-src 'none'");
      expect(csp, path).toContain("script-src 'self';");
      expect(csp, path).toContain("frame-ancestors 'none'");
      const sources = csp.split(';').flatMap((d) => d.trim().split(/\s+/).slice(1)).filter((s) => /^[a-z]+:\/\//.test(s));
      expect(sources, path).toEqual([new URL(t.config.core.baseUrl).origin]);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    }
  });

  test('an asset it does not have is svc\'s 404; a cached asset is revalidated (304)', async () => {
    const missing = await fetch(`${t.url}/docs/static/nope.js`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error_code: string }).error_code).toBe('ROUTE_NOT_FOUND');
    const first = await fetch(`${t.url}/docs/static/swagger-ui.css`);
    const etag = first.headers.get('etag');
    expect(etag).toBeTruthy();
    await first.arrayBuffer();
    const again = await fetch(`${t.url}/docs/static/swagger-ui.css`, { headers: { 'if-none-match': etag! } });
    expect([again.status, (await again.arrayBuffer()).byteLength]).toEqual([304, 0]);
  });

  test('GET /docs and /docs/designs are operations of the document; the assets are not', async () => {
    const doc = (await t.request('GET', '/openapi.json')).body;
    expect(doc.paths['/docs'].get['x-svc-auth']).toBe('none');
    expect(Object.keys(doc.paths['/docs'].get.responses['200'].content)).toEqual(['text/html']);
    expect(doc.paths['/docs/designs'].get['x-svc-auth']).toBe('none');
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/docs'))).toEqual(['/docs', '/docs/designs']);
    // The document links the designs page.
    expect(doc.info.description).toContain('](/docs/designs)');
  });
});

describeOnce('GET /docs/designs: how svc decides what the API leaves open', () => {
  test('lists every design of x-svc-designs, links the reference, runs no script', async () => {
    const doc = (await t.request('GET', '/openapi.json')).body;
    const res = await t.request('GET', '/docs/designs');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.raw).toContain('<a href="/docs">API reference</a>');
    expect(res.raw).not.toMatch(/<script/i);
    expect(doc['x-svc-designs'].length).toBeGreaterThan(3);
    const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
    for (const d of doc['x-svc-designs']) {
      expect(res.raw).toContain(`<td>${escape(d.spec_item)}</td><td>${escape(d.design)}</td>`);
    }
  });
});

const describeBrowser = testEngine() === 'sqlite' && existsSync(chromiumPath) ? describe : describe.skip;

describeBrowser('the reference page in headless Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
  });
  afterAll(async () => browser?.close());

  test('renders every tag, an operation\'s error codes, authentication and examples, asking no other origin', async () => {
    const origin = new URL(t.url).origin;
    const page = await browser.newPage();
    const requested: string[] = [];
    const problems: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
    page.on('pageerror', (e) => problems.push(String(e)));
    const res = await page.goto(`${t.url}/docs`);
    expect(res!.status()).toBe(200);
    await page.waitForSelector('.opblock-tag', { timeout: 30_000 });
    const doc = (await t.request('GET', '/openapi.json')).body;
    const tags = new Set(Object.values<any>(doc.paths).flatMap((item) => Object.values<any>(item).map((op) => op.tags?.[0] ?? 'default')));
    expect(await page.locator('.opblock-tag').count()).toBe(tags.size);
    // The document's own text, the link to the designs page, and the schemes of "Authorize".
    expect(await page.locator('.info a[href="/docs/designs"]').count()).toBe(1);
    expect(await page.locator('.btn.authorize').count()).toBe(1);

    // One operation opened: its error codes, authentication text and request example.
    await page.locator('#operations-tag-default').click();
    const op = page.locator('#operations-default-post_v1_register');
    await op.locator('.opblock-summary').click();
    await expect.poll(() => op.locator('.responses-wrapper').textContent(), { timeout: 15_000 }).toContain('INVALID_AGENT_NAME');
    const text = await op.textContent();
    expect(text).toContain('Authentication:');
    expect(text).toContain('TERMS_NOT_ACCEPTED');
    expect(text).toContain('"agent_name": "my-agent"'); // the guide's request, as the example of the body
    await page.close();

    expect(problems).toEqual([]);
    expect([...new Set(requested.map((u) => new URL(u).origin))]).toEqual([origin]);
  }, 90_000);
});
