import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { buildApp, type App } from '../src/app';
import { loadConfig } from '../src/config';
import { ManualClock } from '../src/lib/clock';
import { createTestDatabase, type TestDatabase } from './helpers/engines';

/**
 * With REDIS_URL set, the per-minute memory limit holds across instances: two apps on one database
 * and one Redis (127.0.0.1:6379) share an agent's budget. PGlite serves one connection, so two apps
 * cannot share it: on that engine the test is skipped (it runs with SVC_TEST_PG=<server URL>).
 */
const pglite = process.env.SVC_TEST_ENGINE === 'postgres' && !process.env.SVC_TEST_PG;
let tdb: TestDatabase;
const apps: App[] = [];
const clock = new ManualClock(Date.UTC(2026, 10, 21, 12, 0, 5));

beforeAll(async () => {
  if (pglite) return;
  tdb = await createTestDatabase();
  for (let i = 0; i < 2; i++) {
    apps.push(await buildApp({
      clock, logger: false,
      config: loadConfig({
        LOG_LEVEL: 'silent', PORT: '0', ...tdb.env, SVC_EMBEDDINGS: 'none', SVC_MEMORY_RATE_PER_MINUTE: '6',
        REDIS_URL: 'redis://127.0.0.1:6379', SVC_INSTANCE_ID: `i${i}`,
      }),
    }));
  }
});
afterAll(async () => {
  for (const a of apps) await a.app.close();
  await tdb?.close();
});

test.skipIf(pglite)('two instances share one agent\'s per-minute budget through Redis', async () => {
  const reg = await apps[0].app.inject({ method: 'POST', url: '/v1/register', payload: { agent_name: `redis-${randomUUID().slice(0, 8)}`, owner_identifier: randomUUID(), agree_to_terms: true } });
  const token = reg.json().api_key as string;
  const hit = (i: number) => apps[i % 2].app.inject({ method: 'GET', url: '/v1/memory/stats', headers: { authorization: `Bearer ${token}` } });
  // The Redis client connects in the background; the first hits may pass unlimited (fail open) — wait
  // until both instances say it is connected (a fixed pause was too short on a loaded machine).
  for (const a of apps) {
    for (let i = 0; i < 100 && (await a.app.inject({ method: 'GET', url: '/health' })).json().redis !== 'ok'; i++) await new Promise((r) => setTimeout(r, 50));
  }
  const statuses: number[] = [];
  for (let i = 0; i < 8; i++) statuses.push((await hit(i)).statusCode);
  expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
  const refused = await hit(1);
  expect(refused.json().error_code).toBe('RATE_LIMIT_EXCEEDED');
  expect(refused.headers['retry-after']).toBe('55');
});

test.skipIf(pglite)('GET /health names Redis: ok when connected; unavailable (status still ok, svc serves) when it does not answer', async () => {
  const health = await apps[0].app.inject({ method: 'GET', url: '/health' });
  expect(health.json()).toMatchObject({ status: 'ok', redis: 'ok' });
  const away = await buildApp({
    clock, logger: false,
    config: loadConfig({ LOG_LEVEL: 'silent', PORT: '0', ...tdb.env, SVC_EMBEDDINGS: 'none', REDIS_URL: 'redis://127.0.0.1:1' }),
  });
  try {
    const res = await away.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'ok', redis: 'unavailable' });
  } finally {
    await away.app.close();
  }
});
