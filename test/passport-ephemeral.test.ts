/**
 * POST /v1/auth/passport/ephemeral: a session-scoped ephemeral passport (its own id, at most 3600 s,
 * trust level `ephemeral`) and a session token bound to it, issued for the root API key or for a
 * passport signature over a challenge (node:crypto and openssl); what the token may do, when it
 * stops, every error code and the route's security.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MAX_ACTIVE_EPHEMERAL_PASSPORTS } from '../src/modules/identity/passport-lifecycle';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';
import { challengeOf, keyOfPem, nodeKey, opensslKey, verifyWith, type KeyPair } from './passport-lifecycle-support';

let t: TestApp;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ADMIN = { 'x-admin-key': 'test-admin-key' };

beforeAll(async () => {
  t = await startTestApp({ env: { SVC_AUTH_CACHE_MS: '60000' } });
});
afterAll(async () => t?.close());

const keyOf = (a: RegisteredAgent): KeyPair => keyOfPem(a.publicKeyPem, a.privateKeyPem);
const ephemeral = (token: string | undefined, body?: unknown) =>
  t.request('POST', '/v1/auth/passport/ephemeral', { token, ...(body === undefined ? {} : { body: body as object }) });
const me = (token: string) => t.request('GET', '/v1/me', { token });

/** agent_id, challenge_id and the signature of `key` over the challenge's sign_payload. */
async function signedBody(agent: RegisteredAgent, key: KeyPair = keyOf(agent), extra: Record<string, unknown> = {}) {
  const c = await challengeOf(t, agent.agentId);
  return { agent_id: agent.agentId, challenge_id: c.challenge_id, signature: key.sign(c.sign_payload), ...extra };
}

const ephemeralRows = (agentId: string) => t.database.db.selectFrom('ephemeral_passports').selectAll().where('agent_id', '=', agentId).execute();

describe('issuing', () => {
  test('201 for the root key: its own id, trust level ephemeral, a session token bound to it (no-store), 3600 s by default', async () => {
    const a = await t.registerAgent();
    const r = await ephemeral(a.apiKey, {});
    expect(r.status, r.raw).toBe(201);
    expect(r.headers['cache-control']).toBe('no-store');
    const now = t.clock.now();
    expect(r.body).toEqual({
      status: 'success',
      ephemeral_passport: {
        ephemeral_passport_id: expect.stringMatching(UUID), agent_id: a.agentId, did: `did:svc:${a.agentId}`,
        trust_levels: ['floor', 'ephemeral'], issued_via: 'root_key',
        created_at: new Date(now).toISOString(), expires_at: new Date(now + 3_600_000).toISOString(),
      },
      session_token: expect.stringMatching(/^svc_session_/), token_type: 'Bearer', expires_in: 3600,
      expires_at: new Date(now + 3_600_000).toISOString(),
    });
    const id = r.body.ephemeral_passport.ephemeral_passport_id;
    expect(await ephemeralRows(a.agentId)).toEqual([expect.objectContaining({ ephemeral_passport_id: id, issued_via: 'root_key' })]);
    const key = await t.database.db.selectFrom('api_keys').selectAll().where('ephemeral_passport_id', '=', id).executeTakeFirstOrThrow();
    expect([key.kind, key.agent_id, Number(key.expires_at)]).toEqual(['session', a.agentId, now + 3_600_000]);
    expect(JSON.stringify(key)).not.toContain(r.body.session_token);
  });

  test('the token: GET /v1/me shows trust level ephemeral and the ephemeral passport id; the root key, an ordinary session and the public passport never show ephemeral', async () => {
    const a = await t.registerAgent();
    const r = await ephemeral(a.apiKey);
    expect(r.status, r.raw).toBe(201);
    const viaToken = await me(r.body.session_token);
    expect(viaToken.status).toBe(200);
    expect(viaToken.body.trust_levels).toEqual(['floor', 'ephemeral']);
    expect(viaToken.body.authenticated_with).toEqual({ kind: 'session', scopes: [], ephemeral_passport_id: r.body.ephemeral_passport.ephemeral_passport_id });
    expect((await me(a.apiKey)).body.trust_levels).toEqual(['floor']);
    expect((await me(a.apiKey)).body.authenticated_with).toEqual({ kind: 'root', scopes: [] });
    const session = (await verifyWith(t, a.agentId, keyOf(a))).body.session_token;
    expect((await me(session)).body.trust_levels).toEqual(['floor']);
    expect((await t.request('GET', `/v1/agents/${a.agentId}/passport`)).body.passport.trust_levels).toEqual(['floor']);
  });

  test('an established agent\'s ephemeral session shows both its standing and ephemeral (one levels function)', async () => {
    const a = await t.registerAgent();
    t.clock.advanceDays(31);
    const r = await ephemeral(a.apiKey);
    expect(r.body.ephemeral_passport.trust_levels).toEqual(['floor', 'ephemeral', 'established']);
    expect((await me(r.body.session_token)).body.trust_levels).toEqual(['floor', 'ephemeral', 'established']);
  });

  test('the token works like a session token: key routes yes, root routes no (403 ROOT_KEY_REQUIRED), scoped routes without a scope check', async () => {
    const a = await t.registerAgent();
    const token = (await ephemeral(a.apiKey)).body.session_token;
    expect((await t.request('GET', '/v1/memory', { token })).status).toBe(200);
    expect((await t.request('GET', '/v1/usage', { token })).status).toBe(200);
    const root = await t.request('POST', '/v1/me/keys', { token, body: { scopes: ['svc:memory'] } });
    expect([root.status, root.body.error_code]).toEqual([403, 'ROOT_KEY_REQUIRED']);
  });

  test('ttl_seconds: the passport and its token end at once when it runs out, even if cached', async () => {
    const a = await t.registerAgent();
    const r = await ephemeral(a.apiKey, { ttl_seconds: 60 });
    expect(r.status).toBe(201);
    expect(r.body.expires_in).toBe(60);
    expect(r.body.ephemeral_passport.expires_at).toBe(new Date(t.clock.now() + 60_000).toISOString());
    t.clock.advance(59_999);
    expect((await me(r.body.session_token)).status).toBe(200); // cached now
    t.clock.advance(1);
    const gone = await me(r.body.session_token);
    expect([gone.status, gone.body.error_code]).toEqual([401, 'INVALID_API_KEY']);
  });

  test('201 for a passport signature (no Bearer), node:crypto', async () => {
    const a = await t.registerAgent();
    const r = await ephemeral(undefined, await signedBody(a, keyOf(a), { ttl_seconds: 900 }));
    expect(r.status, r.raw).toBe(201);
    expect(r.body.ephemeral_passport).toMatchObject({ agent_id: a.agentId, issued_via: 'passport_signature', trust_levels: ['floor', 'ephemeral'] });
    expect(r.body.expires_in).toBe(900);
    expect((await me(r.body.session_token)).body.agent_id).toBe(a.agentId);
  });

  test('201 for a passport signature made by openssl (key made by openssl too)', async () => {
    const k = opensslKey();
    try {
      const a = await t.registerAgent({ passport_public_key: k.publicKeyPem });
      const r = await ephemeral(undefined, await signedBody(a, k));
      expect(r.status, r.raw).toBe(201);
      expect(r.body.ephemeral_passport.issued_via).toBe('passport_signature');
      expect((await me(r.body.session_token)).body.trust_levels).toEqual(['floor', 'ephemeral']);
    } finally {
      k.dispose();
    }
  });

  test('the root key with its own agent_id is fine; no body at all is fine', async () => {
    const a = await t.registerAgent();
    expect((await ephemeral(a.apiKey, { agent_id: a.agentId.toUpperCase() })).status).toBe(201);
    expect((await ephemeral(a.apiKey)).status).toBe(201);
  });

  test('signed by a key replaced in a rotation, inside its grace: the passport ends with the grace', async () => {
    const a = await t.registerAgent();
    const next = nodeKey();
    const c = await challengeOf(t, a.agentId);
    const rot = await t.request('POST', '/v1/me/passport/rotate', { token: a.apiKey, body: { public_key: next.publicKeyPem, challenge_id: c.challenge_id, signature: next.sign(c.sign_payload) } });
    expect(rot.status, rot.raw).toBe(200);
    t.clock.advance(100_000);
    const r = await ephemeral(undefined, await signedBody(a, keyOf(a)));
    expect(r.status, r.raw).toBe(201);
    expect(r.body.expires_in).toBe(200);
    expect(r.body.expires_at).toBe(rot.body.previous_key_valid_until);
    t.clock.advance(200_000);
    expect((await me(r.body.session_token)).status).toBe(401);
    const late = await ephemeral(undefined, await signedBody(a, keyOf(a)));
    expect([late.status, late.body.error_code]).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    expect((await ephemeral(undefined, await signedBody(a, next))).status).toBe(201);
  });

  test('revoking the passport ends its ephemeral passports\' tokens', async () => {
    const a = await t.registerAgent();
    const token = (await ephemeral(a.apiKey)).body.session_token;
    expect((await me(token)).status).toBe(200);
    expect((await t.request('POST', '/v1/me/passport/revoke', { token: a.apiKey })).status).toBe(200);
    expect((await me(token)).status).toBe(401);
  });

  test('the trust adoption report counts ephemeral passports of the last 30 days', async () => {
    const before = (await t.request('GET', '/admin/trust/adoption', { headers: ADMIN })).body;
    const count = (body: any) => body.identity.ephemeral_passports_last_30d as number;
    expect(typeof count(before)).toBe('number');
    const a = await t.registerAgent();
    await ephemeral(a.apiKey);
    await ephemeral(a.apiKey);
    expect(count((await t.request('GET', '/admin/trust/adoption', { headers: ADMIN })).body)).toBe(count(before) + 2);
    t.clock.advanceDays(31);
    expect(count((await t.request('GET', '/admin/trust/adoption', { headers: ADMIN })).body)).toBe(0);
  });
});

describe('errors and security', () => {
  let a: RegisteredAgent;
  let b: RegisteredAgent;
  beforeAll(async () => {
    a = await t.registerAgent();
    b = await t.registerAgent();
  });

  /** A refusal issues nothing. */
  async function refused(token: string | undefined, body: unknown, status: number, code: string, agent = a) {
    const before = (await ephemeralRows(agent.agentId)).length;
    const r = await ephemeral(token, body);
    expect([r.status, r.body.error_code], r.raw).toEqual([status, code]);
    expect(r.body.session_token).toBeUndefined();
    expect((await ephemeralRows(agent.agentId)).length).toBe(before);
    return r;
  }

  test('401 INVALID_API_KEY: an unknown or malformed Bearer, even beside a valid signature', async () => {
    await refused('svc_not-a-real-key-000000000000000000000000000', {}, 401, 'INVALID_API_KEY');
    await refused('svc_not-a-real-key-000000000000000000000000000', await signedBody(a), 401, 'INVALID_API_KEY');
    const r = await t.request('POST', '/v1/auth/passport/ephemeral', { headers: { authorization: 'Basic abc' }, body: {} });
    expect([r.status, r.body.error_code]).toEqual([401, 'INVALID_API_KEY']);
  });

  test('403 ROOT_KEY_REQUIRED: a scoped key (even with every scope), a session token, an ephemeral token', async () => {
    const scoped = (await t.request('POST', '/v1/me/keys', {
      token: a.apiKey, body: { scopes: ['svc:search', 'svc:memory', 'svc:browse', 'svc:commons-publish', 'svc:commons-read', 'svc:blob-store'] },
    })).body.api_key;
    const session = (await verifyWith(t, a.agentId, keyOf(a))).body.session_token;
    const eph = (await ephemeral(a.apiKey)).body.session_token;
    for (const token of [scoped, session, eph]) {
      expect(token).toMatch(/^svc_/);
      await refused(token, {}, 403, 'ROOT_KEY_REQUIRED');
    }
  });

  test('422 EPHEMERAL_CREDENTIALS_CONFLICT: the root key with challenge_id or signature, or naming another agent', async () => {
    const signed = await signedBody(a);
    const cases: [Record<string, unknown>, string[]][] = [
      [signed, ['challenge_id', 'signature']],
      [{ challenge_id: signed.challenge_id }, ['challenge_id']],
      [{ signature: signed.signature }, ['signature']],
      [{ agent_id: b.agentId }, ['agent_id']],
    ];
    for (const [body, conflicting] of cases) {
      const r = await refused(a.apiKey, body, 422, 'EPHEMERAL_CREDENTIALS_CONFLICT');
      expect(r.body.conflicting).toEqual(conflicting);
    }
    expect(await ephemeralRows(b.agentId)).toEqual([]);
  });

  test('422 PASSPORT_SIGNATURE_REQUIRED: without a Bearer, a missing agent_id, challenge_id or signature; an empty or non-string signature or challenge_id', async () => {
    const full = await signedBody(a);
    const r0 = await refused(undefined, {}, 422, 'PASSPORT_SIGNATURE_REQUIRED');
    expect(r0.body.missing).toEqual(['agent_id', 'challenge_id', 'signature']);
    expect((await refused(undefined, undefined, 422, 'PASSPORT_SIGNATURE_REQUIRED')).body.missing).toEqual(['agent_id', 'challenge_id', 'signature']);
    for (const drop of ['agent_id', 'challenge_id', 'signature'] as const) {
      const { [drop]: _gone, ...rest } = full;
      expect((await refused(undefined, rest, 422, 'PASSPORT_SIGNATURE_REQUIRED')).body.missing).toEqual([drop]);
    }
    for (const bad of [{ signature: '' }, { signature: 12 }, { challenge_id: '' }, { challenge_id: {} }]) {
      await refused(undefined, { ...full, ...bad }, 422, 'PASSPORT_SIGNATURE_REQUIRED');
    }
    // Nothing was spent: the challenge still exchanges.
    expect((await ephemeral(undefined, full)).status).toBe(201);
  });

  test('422 INVALID_AGENT_ID: not a UUID, not a string', async () => {
    const full = await signedBody(a);
    for (const agent_id of ['not-a-uuid', 42, `${a.agentId}x`]) await refused(undefined, { ...full, agent_id }, 422, 'INVALID_AGENT_ID');
  });

  test('422 INVALID_EPHEMERAL_TTL: under 60, over 3600, not an integer, a string', async () => {
    for (const ttl_seconds of [59, 3601, 0, -1, 90.5, '600', null]) await refused(a.apiKey, { ttl_seconds }, 422, 'INVALID_EPHEMERAL_TTL');
    for (const ttl_seconds of [60, 3600]) expect((await ephemeral(a.apiKey, { ttl_seconds })).status).toBe(201);
  });

  test('404 CHALLENGE_NOT_FOUND: unknown, malformed, or another agent\'s challenge (signed by that agent: still not yours)', async () => {
    const full = await signedBody(a);
    await refused(undefined, { ...full, challenge_id: '00000000-0000-4000-8000-000000000000' }, 404, 'CHALLENGE_NOT_FOUND');
    await refused(undefined, { ...full, challenge_id: 'nope' }, 404, 'CHALLENGE_NOT_FOUND');
    const theirs = await signedBody(b);
    await refused(undefined, { ...theirs, agent_id: a.agentId }, 404, 'CHALLENGE_NOT_FOUND');
    expect(await ephemeralRows(b.agentId)).toEqual([]);
  });

  test('401 PASSPORT_SIGNATURE_INVALID: another agent\'s key, other bytes, not base64; the attempt spends the challenge (409 CHALLENGE_ALREADY_USED)', async () => {
    for (const sign of [(p: string) => keyOf(b).sign(p), () => keyOf(a).sign('other bytes'), () => '***']) {
      const c = await challengeOf(t, a.agentId);
      await refused(undefined, { agent_id: a.agentId, challenge_id: c.challenge_id, signature: sign(c.sign_payload) }, 401, 'PASSPORT_SIGNATURE_INVALID');
      await refused(undefined, { agent_id: a.agentId, challenge_id: c.challenge_id, signature: keyOf(a).sign(c.sign_payload) }, 409, 'CHALLENGE_ALREADY_USED');
    }
  });

  test('409 CHALLENGE_ALREADY_USED: a challenge already exchanged for a session or an ephemeral passport', async () => {
    const full = await signedBody(a);
    expect((await ephemeral(undefined, full)).status).toBe(201);
    await refused(undefined, full, 409, 'CHALLENGE_ALREADY_USED');
    const viaVerify = await signedBody(a);
    expect((await t.request('POST', '/v1/auth/passport/verify', { body: viaVerify })).status).toBe(200);
    await refused(undefined, viaVerify, 409, 'CHALLENGE_ALREADY_USED');
  });

  test('401 CHALLENGE_EXPIRED', async () => {
    const full = await signedBody(a);
    t.clock.advanceSeconds(t.config.core.challengeTtlSeconds);
    await refused(undefined, full, 401, 'CHALLENGE_EXPIRED');
  });

  test('403 PASSPORT_REVOKED: for the root key of a revoked passport, and for a challenge issued before the revocation', async () => {
    const c = await t.registerAgent();
    const early = await signedBody(c);
    expect((await t.request('POST', '/v1/me/passport/revoke', { token: c.apiKey })).status).toBe(200);
    await refused(c.apiKey, {}, 403, 'PASSPORT_REVOKED', c);
    await refused(undefined, early, 403, 'PASSPORT_REVOKED', c);
  });

  test(`409 EPHEMERAL_PASSPORT_LIMIT_REACHED: ${MAX_ACTIVE_EPHEMERAL_PASSPORTS} working at once, counted one after another under concurrency; expired ones do not count`, async () => {
    const c = await t.registerAgent();
    for (let i = 0; i < MAX_ACTIVE_EPHEMERAL_PASSPORTS - 5; i++) expect((await ephemeral(c.apiKey, { ttl_seconds: 120 })).status).toBe(201);
    const burst = await Promise.all(Array.from({ length: 10 }, () => ephemeral(c.apiKey, { ttl_seconds: 120 })));
    expect(burst.filter((r) => r.status === 201)).toHaveLength(5);
    const over = burst.filter((r) => r.status !== 201);
    expect(over.map((r) => [r.status, r.body.error_code])).toEqual(Array(5).fill([409, 'EPHEMERAL_PASSPORT_LIMIT_REACHED']));
    expect(over[0].body.max_active_ephemeral_passports).toBe(MAX_ACTIVE_EPHEMERAL_PASSPORTS);
    await refused(c.apiKey, {}, 409, 'EPHEMERAL_PASSPORT_LIMIT_REACHED', c);
    // They expire: two minutes on, none is working.
    t.clock.advanceSeconds(120);
    expect((await ephemeral(c.apiKey)).status).toBe(201);
  });
});

describe('discovery', () => {
  test('capabilities, OpenAPI and the passport tool state the route: optional Bearer that must be the root key, the signature way in, every code it gives', async () => {
    const caps = (await t.request('GET', '/v1/capabilities')).body;
    expect(caps.endpoints).toContainEqual(expect.objectContaining({ method: 'POST', path: '/v1/auth/passport/ephemeral', auth: 'optional', bearer: 'root' }));
    expect(caps.authentication.root_key_required.endpoints).toContain('POST /v1/auth/passport/ephemeral');
    expect(caps.authentication.scoped_keys.refused_endpoints).toContain('POST /v1/auth/passport/ephemeral');
    expect(caps.authentication.scoped_keys.any_key_endpoints).not.toContain('POST /v1/auth/passport/ephemeral');
    expect(caps.passport.ephemeral_passports).toMatchObject({
      endpoint: 'POST /v1/auth/passport/ephemeral', trust_level: 'ephemeral',
      lifetime_seconds: { minimum: 60, maximum: 3600, default: 3600 }, max_active_per_agent: MAX_ACTIVE_EPHEMERAL_PASSPORTS,
    });

    const op = (await t.request('GET', '/openapi.json')).body.paths['/v1/auth/passport/ephemeral'].post;
    expect([op['x-svc-auth'], op['x-svc-bearer'], op['x-svc-scope']]).toEqual(['optional', 'root', null]);
    expect(op.requestBody.required).toBe(false);
    expect(Object.keys(op.responses)).toContain('201');
    expect(Object.keys(op.responses)).not.toContain('200');
    const codes = (status: number) => op.responses[String(status)].content['application/json'].schema['x-svc-error-codes'];
    expect(codes(401)).toEqual(expect.arrayContaining(['INVALID_API_KEY', 'PASSPORT_SIGNATURE_INVALID', 'CHALLENGE_EXPIRED']));
    expect(codes(403)).toEqual(expect.arrayContaining(['ROOT_KEY_REQUIRED', 'PASSPORT_REVOKED']));
    expect(codes(404)).toContain('CHALLENGE_NOT_FOUND');
    expect(codes(409)).toEqual(expect.arrayContaining(['CHALLENGE_ALREADY_USED', 'EPHEMERAL_PASSPORT_LIMIT_REACHED']));
    expect(codes(422)).toEqual(expect.arrayContaining(['PASSPORT_SIGNATURE_REQUIRED', 'EPHEMERAL_CREDENTIALS_CONFLICT', 'INVALID_AGENT_ID', 'INVALID_EPHEMERAL_TTL']));

    const tool = JSON.parse((await t.request('GET', '/mcp/v1/svc-passport.json')).raw);
    expect(tool.actions).toContainEqual(expect.objectContaining({ action: 'ephemeral', method: 'POST', path: '/v1/auth/passport/ephemeral', served: true }));
    expect(tool.inputSchema.properties.ttl_seconds).toMatchObject({ minimum: 60, maximum: 3600 });
  });
});
