/**
 * PostgreSQL unreachable (down, restarting, refusing connections): routes answer 503
 * DATABASE_UNAVAILABLE (the memory routes MEMORY_LEDGER_UNAVAILABLE) with request_id (docs/api.md), not 500 INTERNAL_ERROR, and work again once
 * the server is back. A TCP proxy in front of the database drops every connection while `down`.
 * PostgreSQL only: SQLite is a file in the process, never "unreachable".
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, testEngine, type TestDatabase } from './helpers/engines';
import { startTestApp, type TestApp } from './helpers/harness';

const pgOnly = testEngine() === 'postgres';

describe.skipIf(!pgOnly)('the database unreachable', () => {
  let db: TestDatabase;
  let proxy: Server;
  let app: TestApp;
  let down = false;
  const pairs = new Set<{ client: Socket; server: Socket }>();
  beforeAll(async () => {
    db = await createTestDatabase();
    const target = new URL(db.env.DATABASE_URL);
    proxy = createServer((client) => {
      client.on('error', () => {});
      if (down) return void client.destroy();
      const server = connect(Number(target.port), target.hostname);
      server.on('error', () => client.destroy());
      const pair = { client, server };
      pairs.add(pair);
      client.on('close', () => { pairs.delete(pair); server.end(); });
      client.pipe(server);
      server.pipe(client);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const viaProxy = new URL(target);
    viaProxy.host = `127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    app = await startTestApp({ db: { ...db, env: { ...db.env, DATABASE_URL: viaProxy.toString() } } });
  }, 60_000);
  afterAll(async () => {
    down = false;
    await app?.close();
    await new Promise((r) => proxy?.close(r));
    await db?.close();
  });

  test('key routes answer 503 DATABASE_UNAVAILABLE while it lasts, and work again after', async () => {
    const agent = await app.registerAgent();
    expect((await app.request('PUT', '/v1/memory/lake', { token: agent.apiKey, body: { value: { depth: 1642 } } })).status).toBe(200);

    down = true;
    // The server goes away: open connections are cut (their end towards the server closed cleanly).
    for (const { client, server } of pairs) {
      server.unpipe(client);
      client.destroy();
      server.end();
    }
    try {
      // The memory routes name it for what they read and write: the memory ledger (docs/memory.md).
      for (const [method, url, body, code] of [
        ['GET', '/v1/me', undefined, 'DATABASE_UNAVAILABLE'], ['GET', '/v1/memory/lake', undefined, 'MEMORY_LEDGER_UNAVAILABLE'],
        ['PUT', '/v1/memory/lake', { value: 2 }, 'MEMORY_LEDGER_UNAVAILABLE'], ['GET', '/v1/memory', undefined, 'MEMORY_LEDGER_UNAVAILABLE'],
      ] as const) {
        const r = await app.request(method, url, { token: agent.apiKey, ...(body ? { body } : {}) });
        expect([r.status, r.body.error_code], `${method} ${url}`).toEqual([503, code]);
        expect(r.body.request_id).toEqual(expect.any(String));
        expect(JSON.stringify(r.body)).not.toContain('ECONNRESET');
      }
      const health = await app.request('GET', '/health');
      expect([health.status, health.body.error_code]).toEqual([503, 'DATABASE_UNAVAILABLE']);
    } finally {
      down = false;
    }

    // Back: nothing was half written (the PUT refused above never happened).
    const got = await app.request('GET', '/v1/memory/lake', { token: agent.apiKey });
    expect([got.status, got.body.value, got.body.version]).toEqual([200, { depth: 1642 }, 1]);
    expect((await app.request('GET', '/health')).status).toBe(200);
  });
});
