/**
 * The robots.txt matcher that replaces robots-parser's quadratic one (robots.ts) must decide exactly
 * as robots-parser does, in time linear in the URL.
 */
import robotsParser from 'robots-parser';
import { describe, expect, test } from 'vitest';
import { ManualClock } from '../../lib/clock';
import type { GuardedClient } from './guarded-client';
import { createRobotsPolicy, ruleMatches } from './robots';

/** A client that answers every robots.txt with `body` (no network). */
function fixedRobots(body: string): GuardedClient {
  return {
    fetch: async (url) => ({ status: 200, headers: {}, finalUrl: url, body: Buffer.from(body), contentType: 'text/plain', redirects: 0, truncated: false }),
    checkUrl: (u) => new URL(String(u)),
    validatePublicUrl: async (u) => new URL(String(u)),
    resolve: async () => {},
    close: async () => {},
  };
}

describe('robots.txt rule matching', () => {
  test('the linear matcher decides as robots-parser on random patterns and paths (wildcards, $ anchors, literal $ inside)', () => {
    let seed = 42;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const pick = (alphabet: string, max: number) => Array.from({ length: rnd(max) }, () => alphabet[rnd(alphabet.length)]).join('');
    for (let i = 0; i < 5000; i++) {
      const pattern = `/${pick('ab*$/', 7)}`;
      const path = `/${pick('ab$/', 9)}`;
      const robot = robotsParser('http://h.test/robots.txt', `User-agent: *\nDisallow: ${pattern}\n`);
      const libraryMatches = robot.isAllowed(`http://h.test${path}`, 'svc-browse') === false;
      expect(ruleMatches(pattern, path), `${pattern} against ${path}`).toBe(libraryMatches);
    }
  });

  test('a hostile 500 KiB robots.txt against an 8 KiB URL is decided in milliseconds, not seconds of blocked event loop', async () => {
    const stars = `User-agent: *\nDisallow: /${'*'.repeat(300 * 1024)}x\n`;
    const longLiterals = Array.from({ length: 24 }, () => `Disallow: /*${'a'.repeat(8000)}b`).join('\n');
    const policy = createRobotsPolicy({ client: fixedRobots(`${stars}${longLiterals}\nDisallow: /*.pdf$\n`), clock: new ManualClock(), ttlMs: 60_000, errorTtlMs: 60_000 });
    const path = `/${'a'.repeat(8000)}`;
    await policy.decide('http://h.test/'); // fetch and parse once
    const started = performance.now();
    expect(await policy.decide(`http://h.test${path}`)).toBe('allowed');
    expect(await policy.decide(`http://h.test${path}.pdf`)).toBe('disallowed');
    expect(await policy.decide(`http://h.test${path}b`)).toBe('disallowed');
    expect(performance.now() - started).toBeLessThan(2000); // robots-parser's matcher: 5–16 s here; ours a few ms
  });
});
