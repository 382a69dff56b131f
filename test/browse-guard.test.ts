import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createEnvelopeBuilder } from '../src/http/envelope';
import { ApiError } from '../src/http/errors';
import { createOutboundWebFromConfig, type Resolver } from '../src/infra/web';
import { tierOf } from '../src/lib/tiers';
import { billingModuleFor } from '../src/modules/billing/module';
import { createBrowseModule } from '../src/modules/browse/module';
import { html, redirect, startWebServer, text, type FakeWebServer } from './fakes/web-server';
import { startWebApp, type WebApp } from './search-support';

/**
 * Guard cases that need a public-looking origin while loopback stays refused: the browse module is
 * built on the test app's database and billing with an outbound layer whose policy allows exactly
 * 127.0.0.2 (the "public" site) and whose resolver maps test names. 127.0.0.1 (the "internal"
 * server) stays refused, so redirects, DNS answers and page sub-requests aimed at it must fail
 * without it ever seeing a request.
 */
const HAS_CHROMIUM = existsSync('/usr/bin/chromium');
let w: WebApp;
let pub: FakeWebServer;
let internal: FakeWebServer;
let browse: ReturnType<typeof createBrowseModule>;
let names: Record<string, string[]> = {};

beforeAll(async () => {
  internal = await startWebServer({ routes: { '/robots.txt': text('User-agent: *\nAllow: /\n'), '/secret': html('<p>internal admin page</p>') } });
  pub = await startWebServer({ host: '127.0.0.2', routes: { '/robots.txt': text('User-agent: *\nAllow: /\n') } });
  // The servers' ports are allowed so that refusals below come from the address checks, not the port rule.
  w = await startWebApp({
    SVC_OUTBOUND_ALLOW_LOOPBACK: 'false', SVC_ROBOTS_CACHE_SECONDS: '0', SVC_ROBOTS_ERROR_CACHE_SECONDS: '0',
    SVC_OUTBOUND_ALLOWED_PORTS: `80,443,${pub.port},${internal.port}`,
  });
  const resolver: Resolver = async (host) => {
    const answers = names[host];
    if (!answers) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  const web = createOutboundWebFromConfig(w.config, { clock: w.clock, resolver, allowAddresses: ['127.0.0.2'] });
  browse = createBrowseModule({
    config: w.config, database: w.built.database, clock: w.clock,
    envelope: createEnvelopeBuilder(w.config.core, w.clock, async () => ({ agents_registered: 0, agents_registered_last_7d: 0, directory_listed: 0, founding_period_ends_at: '' })),
    metering: billingModuleFor(w.config)!.metering,
    tiers: { effectiveTier: async (_id, stored) => tierOf(stored) },
    web,
  });
});
afterAll(async () => {
  await browse?.close();
  await w?.close();
  await pub?.close();
  await internal?.close();
});

async function attempt(url: string, mode: 'static' | 'dynamic' = 'static') {
  const a = await w.agent('free', { createdAgoMs: 3 * 86_400_000 });
  try {
    return { ok: true as const, value: await browse.service.browse({ agentId: a.id, tier: 'free', createdAt: w.clock.now() - 3 * 86_400_000 }, { url, mode }) };
  } catch (e) {
    if (e instanceof ApiError) return { ok: false as const, status: e.status, code: e.code };
    throw e;
  }
}

describe('guarded browse with loopback refused', () => {
  test('the allowed origin works (control)', async () => {
    pub.route('/page', html('<html><head><title>Public</title></head><body><p>A public page with enough words to count as its own main text for the extractor to keep.</p></body></html>'));
    const r = await attempt(`${pub.url}/page`);
    expect(r.ok && r.value.record.title).toBe('Public');
  });

  test('a redirect to an internal address is refused at the hop; the internal server sees nothing', async () => {
    pub.route('/hop', redirect(`http://127.0.0.1:${internal.port}/secret`));
    pub.route('/hop-name', redirect('http://intranet.test/secret'));
    names['intranet.test'] = ['127.0.0.1'];
    for (const path of ['/hop', '/hop-name']) {
      const r = await attempt(`${pub.url}${path}`);
      expect(r, path).toMatchObject({ ok: false, status: 422, code: 'BROWSE_URL_BLOCKED' });
    }
    expect(internal.hits).toEqual([]);
  });

  test('names that resolve to internal addresses are refused, including a mix of public and private answers', async () => {
    names['evil.test'] = ['127.0.0.1'];
    names['mixed.test'] = ['127.0.0.2', '10.0.0.5'];
    names['mapped.test'] = ['::ffff:127.0.0.1'];
    for (const host of ['evil.test', 'mixed.test', 'mapped.test']) {
      const r = await attempt(`http://${host}:${pub.port}/page`);
      expect(r, host).toMatchObject({ ok: false, status: 422, code: 'BROWSE_URL_BLOCKED' });
    }
    expect(internal.hits).toEqual([]);
  });

  test('a public name (control) passes the same checks', async () => {
    names['public.test'] = ['127.0.0.2'];
    pub.route('/named', html('<html><head><title>Named</title></head><body><p>Reached by name through the resolver, which answered with the allowed address only.</p></body></html>'));
    const r = await attempt(`http://public.test:${pub.port}/named`);
    expect(r.ok && r.value.record.title).toBe('Named');
  });

  test('DNS rebinding: a name that answers public at validation and internal at connect is refused at connect time', async () => {
    let calls = 0;
    const saved = names;
    names = new Proxy(saved, {
      get: (target, host: string) => (host === 'rebind.test' ? [++calls === 1 ? '127.0.0.2' : '127.0.0.1'] : target[host]),
    });
    try {
      pub.hits.length = 0;
      const r = await attempt(`http://rebind.test:${pub.port}/secret`);
      // The connect-time check (robots.txt is the first connection) refuses 127.0.0.1: the agent is
      // told the URL is blocked (not that robots.txt disallows it), and nothing was fetched anywhere.
      expect(r).toMatchObject({ ok: false, status: 422, code: 'BROWSE_URL_BLOCKED' });
      expect(calls).toBeGreaterThan(1);
      expect(pub.hits).toEqual([]);
      expect(internal.hits).toEqual([]);
    } finally {
      names = saved;
    }
  });

  test.skipIf(!HAS_CHROMIUM)('dynamic: the page\'s own sub-requests to internal addresses are refused; the page still renders', async () => {
    pub.route('/js', html(`<!doctype html><html><head><title>Probe</title></head><body><main><p id="o">waiting</p>
      <img src="http://127.0.0.1:${internal.port}/secret?img">
      <script>
        fetch('http://127.0.0.1:${internal.port}/secret?fetch').then(() => 'reached', () => 'blocked')
          .then((r) => { document.getElementById('o').textContent = 'Internal fetch was ' + r + '. The rest of this sentence gives the paragraph enough words to be the main text.'; });
      </script></main></body></html>`));
    const r = await attempt(`${pub.url}/js`, 'dynamic');
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value.record.text).toContain('Internal fetch was blocked.');
    expect(internal.hits).toEqual([]);
  }, 30_000);
});
if (!HAS_CHROMIUM) console.warn('!! SKIPPED dynamic sub-request test: no Chromium at /usr/bin/chromium');
