/**
 * robots.txt over real HTTP from a loopback server (loopback allowed: these are not SSRF tests),
 * with a manual clock for the cache.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ManualClock } from '../../lib/clock';
import { redirect, respond, startWebServer, text, type FakeWebServer } from '../../../test/fakes/web-server';
import { createGuardedClient, type GuardedClient } from './guarded-client';
import { createRobotsPolicy, ROBOTS_TOKEN } from './robots';

let client: GuardedClient;
const servers: FakeWebServer[] = [];

async function siteWith(robots: Parameters<FakeWebServer['route']>[1] | null): Promise<FakeWebServer> {
  const s = await startWebServer();
  if (robots) s.route('/robots.txt', robots);
  servers.push(s);
  return s;
}

function policy(clock = new ManualClock()) {
  return createRobotsPolicy({ client, clock, ttlMs: 3_600_000, errorTtlMs: 60_000 });
}

beforeAll(() => {
  client = createGuardedClient({ allowLoopback: true });
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await client.close();
});

describe('rules from a 2xx robots.txt', () => {
  test('allow and disallow for all agents', async () => {
    const s = await siteWith(text('User-agent: *\nDisallow: /private/\nAllow: /private/press/\n'));
    const robots = policy();
    expect(await robots.isAllowed(`${s.url}/`)).toBe(true);
    expect(await robots.isAllowed(`${s.url}/articles/1`)).toBe(true);
    expect(await robots.isAllowed(`${s.url}/private/accounts`)).toBe(false);
    expect(await robots.isAllowed(`${s.url}/private/press/release-1`)).toBe(true); // longest match wins
  });

  test('wildcards and end anchors', async () => {
    const s = await siteWith(text('User-agent: *\nDisallow: /*.pdf$\nDisallow: /search*q=\nDisallow: /*/edit\n'));
    const robots = policy();
    expect(await robots.isAllowed(`${s.url}/docs/manual.pdf`)).toBe(false);
    expect(await robots.isAllowed(`${s.url}/docs/manual.pdf?download=1`)).toBe(true);
    expect(await robots.isAllowed(`${s.url}/search?q=cats`)).toBe(false);
    expect(await robots.isAllowed(`${s.url}/search`)).toBe(true);
    expect(await robots.isAllowed(`${s.url}/wiki/Page/edit`)).toBe(false);
    expect(await robots.isAllowed(`${s.url}/wiki/Page`)).toBe(true);
  });

  test(`a group naming ${ROBOTS_TOKEN} overrides the * group`, async () => {
    const s = await siteWith(text(`User-agent: *\nDisallow: /\n\nUser-agent: ${ROBOTS_TOKEN}\nDisallow: /admin\n`));
    const robots = policy();
    expect(await robots.isAllowed(`${s.url}/news`)).toBe(true);
    expect(await robots.isAllowed(`${s.url}/admin/users`)).toBe(false);
  });

  test('a group for another crawler does not apply to us', async () => {
    const s = await siteWith(text('User-agent: OtherBot\nDisallow: /\n'));
    expect(await policy().isAllowed(`${s.url}/anything`)).toBe(true);
  });

  test('Disallow: / for everyone disallows everything', async () => {
    const s = await siteWith(text('User-agent: *\nDisallow: /\n'));
    expect(await policy().isAllowed(`${s.url}/`)).toBe(false);
  });

  test('rules found after a redirect apply to the original origin', async () => {
    const target = await siteWith(text('User-agent: *\nDisallow: /blocked\n'));
    const s = await siteWith(redirect(`${target.url}/robots.txt`, 301));
    const robots = policy();
    expect(await robots.isAllowed(`${s.url}/blocked/page`)).toBe(false);
    expect(await robots.isAllowed(`${s.url}/open`)).toBe(true);
  });
});

describe('status semantics (RFC 9309)', () => {
  test('404 (no robots.txt) allows everything', async () => {
    const s = await siteWith(null);
    expect(await policy().isAllowed(`${s.url}/private/x`)).toBe(true);
    expect(s.hits).toContain('/robots.txt');
  });

  test('403 allows everything', async () => {
    const s = await siteWith(text('forbidden', 403));
    expect(await policy().isAllowed(`${s.url}/x`)).toBe(true);
  });

  test('5xx disallows everything', async () => {
    const s = await siteWith(text('down for maintenance', 503));
    expect(await policy().isAllowed(`${s.url}/x`)).toBe(false);
  });

  test('an unreachable server disallows everything', async () => {
    const s = await siteWith(null);
    const url = `${s.url}/x`;
    await s.close();
    expect(await policy().isAllowed(url)).toBe(false);
  });

  test('a robots.txt redirecting to an internal address disallows everything', async () => {
    const strict = createGuardedClient({ allowLoopback: false, allowAddresses: ['127.0.0.2'] });
    const s = await startWebServer({ host: '127.0.0.2', routes: { '/robots.txt': redirect('http://169.254.169.254/robots.txt') } });
    servers.push(s);
    const robots = createRobotsPolicy({ client: strict, clock: new ManualClock(), ttlMs: 1000, errorTtlMs: 1000 });
    expect(await robots.isAllowed(`${s.url}/x`)).toBe(false);
    await strict.close();
  });

  test('an origin whose own address is refused at connect throws BROWSE_URL_BLOCKED (not a robots verdict) and is not cached', async () => {
    let calls = 0;
    // The name answers internal when robots.txt connects (in a browse, after it answered public at
    // the browse's own validation: DNS rebinding).
    const resolver = async () => { calls++; return [{ address: '127.0.0.1', family: 4 as const }]; };
    const strict = createGuardedClient({ allowLoopback: false, resolver });
    const robots = createRobotsPolicy({ client: strict, clock: new ManualClock(), ttlMs: 3_600_000, errorTtlMs: 60_000 });
    for (let i = 0; i < 2; i++) {
      const before = calls;
      await expect(robots.isAllowed('http://rebind.example.com/x')).rejects.toMatchObject({ code: 'BROWSE_URL_BLOCKED', reason: 'address_not_allowed' });
      expect(calls, 'asked again: a refusal is not cached').toBeGreaterThan(before);
    }
    await strict.close();
  });

  test('a huge robots.txt is read up to 500 KiB, not refused', async () => {
    const body = `User-agent: *\nDisallow: /secret\n${'# filler line\n'.repeat(60_000)}Disallow: /beyond-the-limit\n`;
    const s = await siteWith(respond(200, body, { 'content-type': 'text/plain' }));
    const robots = policy();
    expect(await robots.isAllowed(`${s.url}/secret`)).toBe(false);
    expect(await robots.isAllowed(`${s.url}/beyond-the-limit`)).toBe(true);
  });
});

describe('cache', () => {
  test('one fetch per origin within the TTL, refetched after it', async () => {
    const s = await siteWith(text('User-agent: *\nDisallow: /a\n'));
    const clock = new ManualClock();
    const robots = policy(clock);
    await Promise.all([robots.isAllowed(`${s.url}/a`), robots.isAllowed(`${s.url}/b`), robots.isAllowed(`${s.url}/c`)]);
    expect(await robots.isAllowed(`${s.url}/a`)).toBe(false);
    expect(s.hits.filter((h) => h === '/robots.txt')).toHaveLength(1);

    s.route('/robots.txt', text('User-agent: *\nDisallow: /b\n'));
    clock.advance(3_599_000);
    expect(await robots.isAllowed(`${s.url}/a`)).toBe(false); // still cached
    clock.advance(2_000);
    expect(await robots.isAllowed(`${s.url}/a`)).toBe(true); // expired: new rules
    expect(await robots.isAllowed(`${s.url}/b`)).toBe(false);
    expect(s.hits.filter((h) => h === '/robots.txt')).toHaveLength(2);
  });

  test('an unreachable verdict is kept only for the short error TTL', async () => {
    const s = await siteWith(text('oops', 500));
    const clock = new ManualClock();
    const robots = policy(clock);
    expect(await robots.isAllowed(`${s.url}/x`)).toBe(false);
    s.route('/robots.txt', text('User-agent: *\nAllow: /\n'));
    clock.advance(30_000);
    expect(await robots.isAllowed(`${s.url}/x`)).toBe(false);
    clock.advance(31_000);
    expect(await robots.isAllowed(`${s.url}/x`)).toBe(true);
  });
});
