import { describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from '../config';

describe('loadConfig', () => {
  test('defaults give a working embedded configuration', () => {
    const c = loadConfig({});
    expect(c.core.port).toBe(3000);
    expect(c.core.databaseUrl).toBeUndefined();
    expect(c.core.baseUrl).toBe('http://localhost:3000');
    expect(c.core.termsUrl).toBe('http://localhost:3000/terms');
  });

  test('every bad value is reported at once with its variable name', () => {
    try {
      loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud', SVC_OUTBOUND_ALLOW_LOOPBACK: 'maybe' });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const msg = (e as Error).message;
      expect(msg).toContain('PORT must be an integer');
      expect(msg).toContain('DATABASE_URL must use postgres: or postgresql:');
      expect(msg).toContain('LOG_LEVEL must be one of');
      expect(msg).toContain('SVC_OUTBOUND_ALLOW_LOOPBACK must be true or false');
    }
  });

  test('bounds are enforced', () => {
    expect(() => loadConfig({ PORT: '70000' })).toThrow(/PORT must be at most 65535/);
    expect(() => loadConfig({ SVC_CHALLENGE_TTL_SECONDS: '5' })).toThrow(/at least 10/);
    // Timers past Node's limit (2^31 - 1 ms) would fire every millisecond.
    expect(() => loadConfig({ SVC_QUEUE_POLL_INTERVAL_MS: '3000000000' })).toThrow(/SVC_QUEUE_POLL_INTERVAL_MS must be at most/);
    expect(() => loadConfig({ SVC_BLOB_SWEEP_INTERVAL_SECONDS: '3000000' })).toThrow(/SVC_BLOB_SWEEP_INTERVAL_SECONDS must be at most/);
  });

  test('dates, URLs, origins and domains are checked as what they are', () => {
    expect(loadConfig({ SVC_TERMS_VERSION: '2027-01-31', SVC_FOUNDING_PERIOD_END: '2027-06-30T12:00:00+02:00' }).core.termsVersion).toBe('2027-01-31');
    for (const [env, says] of [
      [{ SVC_TERMS_VERSION: 'banana' }, 'SVC_TERMS_VERSION must be a date'],
      [{ SVC_TERMS_VERSION: '2026-02-30' }, 'SVC_TERMS_VERSION must be a date'],
      [{ SVC_FOUNDING_PERIOD_END: '2027-06-30' }, 'SVC_FOUNDING_PERIOD_END must be an ISO 8601 date-time'],
      [{ SVC_FOUNDING_PERIOD_END: '2027-02-30T00:00:00Z' }, 'SVC_FOUNDING_PERIOD_END must be an ISO 8601 date-time'], // no such day (was accepted: Date.parse rolls it over)
      [{ SVC_STRIPE_JS_URL: 'js.stripe.com/v3' }, 'SVC_STRIPE_JS_URL must be a URL'],
      [{ SVC_MCP_ALLOWED_ORIGINS: 'inspector.example' }, '"inspector.example" is not an origin'],
      [{ SVC_MCP_ALLOWED_ORIGINS: 'https://ok.example, https://a.example/path' }, '"https://a.example/path" is not an origin'],
      [{ SVC_NEWS_DOMAINS: 'reuters.com, not a domain' }, '"not a domain" is not a domain name'],
    ] as const) {
      expect(() => loadConfig(env), says).toThrow(says);
    }
    expect(loadConfig({ SVC_MCP_ALLOWED_ORIGINS: 'http://127.0.0.1:6274,https://x.example/' }).discovery.mcpAllowedOrigins).toHaveLength(2);
    expect(loadConfig({ SVC_NEWS_DOMAINS: 'www.Example.co.uk,bbc.com.' }).search.newsDomains).toEqual(['www.Example.co.uk', 'bbc.com.']);
  });

  test('SVC_BASE_URL drives links; trailing slash removed', () => {
    const c = loadConfig({ SVC_BASE_URL: 'https://svc.example.com/' });
    expect(c.core.baseUrl).toBe('https://svc.example.com');
    expect(c.core.termsUrl).toBe('https://svc.example.com/terms');
  });
});

describe('settings that must agree', () => {
  test('S3 without a bucket, half credentials, default above max are refused at start-up', () => {
    expect(() => loadConfig({ SVC_BLOB_STORE: 's3' })).toThrow(/SVC_S3_BUCKET is required/);
    expect(() => loadConfig({ SVC_S3_ACCESS_KEY_ID: 'a' })).toThrow(/must be set together/);
    expect(() => loadConfig({ SVC_BLOB_SIGNED_URL_DEFAULT_SECONDS: '7200', SVC_BLOB_SIGNED_URL_MAX_SECONDS: '3600' })).toThrow(/must not exceed/);
  });
});

describe('docs/configuration.md', () => {
  test('is what `npm run config:docs -- --write` makes of the declarations (every setting documented)', async () => {
    const { readFileSync } = await import('node:fs');
    const { configurationMarkdown } = await import('../../scripts/config-docs');
    const file = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    expect(file, 'docs/configuration.md is stale: run `npm run config:docs -- --write`').toBe(configurationMarkdown());
  });
});
