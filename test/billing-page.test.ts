import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { testEngine } from './helpers/engines';
import { startTestApp, type TestApp } from './helpers/harness';
import { startStripeFake, stripeEnv, type StripeFake } from './fakes/stripe';

// The page does not depend on the database engine: run it once (SQLite project).
const describeOnce = testEngine() === 'sqlite' ? describe : describe.skip;

let t: TestApp;
let fake: StripeFake;
let browser: Browser;
beforeAll(async () => {
  if (testEngine() !== 'sqlite') return;
  fake = await startStripeFake();
  t = await startTestApp({ env: { ...stripeEnv(fake) }, listen: true });
  browser = await chromium.launch({ executablePath: process.env.SVC_CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  await fake?.close();
});

describeOnce('billing page in headless Chromium', () => {
  test('renders, reads the intent from the client secret, and says clearly that Stripe.js could not load', async () => {
    const a = await t.registerAgent();
    const co = await t.request('POST', '/v1/billing/credits/checkout', { token: a.apiKey, body: { credits: 250 } });
    const pageUrl = co.body.billing_page_url.replace(/^https?:\/\/[^/]+/, t.url);
    const page = await browser.newPage();
    const requested: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    const res = await page.goto(pageUrl);
    expect(res!.status()).toBe(200);
    expect(res!.headers()['content-security-policy']).toContain('https://js.stripe.com');
    expect(await page.title()).toBe('svc billing');
    await expect.poll(() => page.locator('#intent').textContent(), { timeout: 15_000 }).toBe(`Payment ${co.body.intent_id}`);
    await expect.poll(() => page.locator('#message').textContent(), { timeout: 15_000 }).toContain('Stripe.js could not be loaded from js.stripe.com');
    expect(await page.locator('#message').getAttribute('class')).toBe('error');
    expect(await page.locator('#pay-form').isHidden()).toBe(true);
    // It asked svc for the publishable key and Stripe for Stripe.js; the secret never went to svc.
    expect(requested.some((u) => u.endsWith('/v1/billing/config'))).toBe(true);
    expect(requested.some((u) => u.startsWith('https://js.stripe.com/v3'))).toBe(true);
    expect(requested.filter((u) => u.startsWith(t.url)).every((u) => !u.includes('_secret_'))).toBe(true);
    await page.close();
  });

  test('without a client secret it says what to do', async () => {
    const page = await browser.newPage();
    await page.goto(`${t.url}/billing`);
    await expect.poll(() => page.locator('#message').textContent()).toContain('POST /v1/billing/credits/checkout');
    await page.close();
  });

  test('assets are served; unknown assets are 404', async () => {
    expect((await t.request('GET', '/billing/billing.js')).status).toBe(200);
    expect((await t.request('GET', '/billing/nope.js')).status).toBe(404);
    // Names of Object.prototype's members are not assets either (they were a cacheable 500).
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const r = await t.request('GET', `/billing/${name}`);
      expect(r.status, name).toBe(404);
      expect(r.headers['cache-control'], name).toBeUndefined();
    }
  });

  test('the page cannot be framed by another site', async () => {
    const page = await t.request('GET', '/billing');
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['x-frame-options']).toBe('DENY');
  });
});
