import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { signEd25519 } from '../src/lib/ed25519';
import { createTestDatabase, type TestDatabase } from './helpers/engines';
import { startTestApp, type TestApp } from './helpers/harness';

// Two instances on one database. PGlite takes one connection at a time, so on the postgres
// project this runs only against a PostgreSQL server (CI); SQLite shares the file.
const twoInstancesPossible = process.env.SVC_TEST_ENGINE !== 'postgres' || !!process.env.SVC_TEST_PG;

describe.skipIf(!twoInstancesPossible)('token lookups reused for SVC_AUTH_CACHE_MS across instances', () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase();
    a = await startTestApp({ db, env: { SVC_AUTH_CACHE_MS: '2000' } });
    b = await startTestApp({ db, env: { SVC_AUTH_CACHE_MS: '2000' } });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await db?.close();
  });

  test('a revocation on one instance reaches the other within the cache time, at once on its own', async () => {
    const agent = await a.registerAgent();
    const c = (await a.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: agent.agentId } })).body;
    const v = await a.request('POST', '/v1/auth/passport/verify', {
      body: { agent_id: agent.agentId, challenge_id: c.challenge_id, signature: signEd25519(agent.privateKeyPem, Buffer.from(c.sign_payload)) },
    });
    const session = v.body.session_token as string;
    // Instance b verifies (and caches) the session.
    expect((await b.request('GET', '/v1/me', { token: session })).status).toBe(200);
    // Revoked through instance a: a refuses at once.
    expect((await a.request('POST', '/v1/me/passport/revoke', { token: agent.apiKey })).status).toBe(200);
    expect((await a.request('GET', '/v1/me', { token: session })).status).toBe(401);
    // b may still accept it inside its cache window, and must refuse once the window has passed.
    b.clock.advance(1999);
    expect((await b.request('GET', '/v1/me', { token: session })).status).toBe(200);
    b.clock.advance(1);
    expect((await b.request('GET', '/v1/me', { token: session })).status).toBe(401);
  });

  test('with SVC_AUTH_CACHE_MS=0 every request reads the database', async () => {
    const c = await startTestApp({ db, env: { SVC_AUTH_CACHE_MS: '0' } });
    try {
      const agent = await a.registerAgent();
      const ch = (await a.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: agent.agentId } })).body;
      const session = (await a.request('POST', '/v1/auth/passport/verify', {
        body: { agent_id: agent.agentId, challenge_id: ch.challenge_id, signature: signEd25519(agent.privateKeyPem, Buffer.from(ch.sign_payload)) },
      })).body.session_token as string;
      expect((await c.request('GET', '/v1/me', { token: session })).status).toBe(200);
      await a.request('POST', '/v1/me/passport/revoke', { token: agent.apiKey });
      expect((await c.request('GET', '/v1/me', { token: session })).status).toBe(401);
    } finally {
      await c.close();
    }
  });
});
