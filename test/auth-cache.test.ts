import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ManualClock } from '../src/lib/clock';
import { signEd25519 } from '../src/lib/ed25519';
import { createIdentityService } from '../src/modules/identity/service';
import { createIdentityStore } from '../src/modules/identity/store';
import { openRigDatabase } from './billing-support';
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

describe('a lookup racing a cache clear (one instance, the service over a real database)', () => {
  test('a row read before a tier change is not cached after it: the next request reads the new tier', async () => {
    // Before: authenticate read the key row, a tier change (or a passport revoke) cleared the cache
    // meanwhile, and the row read before it was cached afterwards, answered for up to SVC_AUTH_CACHE_MS.
    const { test: tdb, handle } = await openRigDatabase();
    try {
      const real = createIdentityStore(handle.db, handle.sqlite);
      let hold: Promise<void> | undefined;
      const store = Object.assign(Object.create(real), {
        async lookupKey(hash: string) {
          const row = await real.lookupKey(hash);
          await hold; // the clear happens while this lookup is out
          return row;
        },
      }) as typeof real;
      const clock = new ManualClock();
      const identity = createIdentityService({
        store, clock, baseUrl: 'http://svc.test', challengeTtlSeconds: 300, foundingPeriodEnd: '2026-01-01T00:00:00Z', authCacheMs: 2000,
      });
      const reg = await identity.register({ agent_name: 'race', owner_identifier: 'race-owner', agree_to_terms: true });
      let release!: () => void;
      hold = new Promise((r) => { release = r; });
      const racing = identity.authenticate(reg.apiKey);
      await new Promise((r) => setTimeout(r, 20)); // the lookup has read the row and waits
      await identity.setTier(reg.agentId, 'pro');
      release();
      expect((await racing)?.tier).toBe('free'); // read before the change: that request may see it
      hold = undefined;
      expect((await identity.authenticate(reg.apiKey))?.tier).toBe('pro');
      // ...and that answer is cached as usual.
      await handle.db.updateTable('agents').set({ tier: 'starter' }).where('agent_id', '=', reg.agentId).execute();
      expect((await identity.authenticate(reg.apiKey))?.tier).toBe('pro');
      clock.advance(2000);
      expect((await identity.authenticate(reg.apiKey))?.tier).toBe('starter');
    } finally {
      await handle.close();
      await tdb.close();
    }
  });
});
