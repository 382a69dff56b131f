import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { signEd25519 } from '../src/lib/ed25519';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

let t: TestApp;
let a: RegisteredAgent;
let b: RegisteredAgent;
beforeAll(async () => {
  t = await startTestApp();
  a = await t.registerAgent();
  b = await t.registerAgent();
});
afterAll(async () => t?.close());

async function challenge(agentId: string) {
  const res = await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: agentId } });
  expect(res.status).toBe(200);
  return res.body;
}

async function session(agent: RegisteredAgent): Promise<string> {
  const c = await challenge(agent.agentId);
  const v = await t.request('POST', '/v1/auth/passport/verify', {
    body: { agent_id: agent.agentId, challenge_id: c.challenge_id, signature: signEd25519(agent.privateKeyPem, Buffer.from(c.sign_payload, 'utf8')) },
  });
  expect(v.status).toBe(200);
  return v.body.session_token;
}

describe('GET /v1/me', () => {
  test('returns the agent record, never the key', async () => {
    const res = await t.request('GET', '/v1/me', { token: a.apiKey });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      agent_id: a.agentId, tier: 'free', referral_code: a.agentId, referral_agent: null,
      trust_levels: ['floor'], did: `did:svc:${a.agentId}`, authenticated_with: { kind: 'root' },
    });
    expect(res.body.created_at).toBe(new Date(t.clock.now()).toISOString());
    expect(res.raw).not.toContain(a.apiKey);
  });

  test('missing, malformed, unknown key → 401 INVALID_API_KEY', async () => {
    for (const headers of [{}, { authorization: 'Bearer' }, { authorization: 'Basic abc' }, { authorization: 'Bearer svc_nope' }, { authorization: `Bearer ${a.apiKey}x` }, { authorization: 'Bearer not_svc_key' }] as Record<string, string>[]) {
      const res = await t.request('GET', '/v1/me', { headers });
      expect(res.status).toBe(401);
      expect(res.body.error_code).toBe('INVALID_API_KEY');
    }
  });

  test('each key sees only its own agent', async () => {
    const res = await t.request('GET', '/v1/me', { token: b.apiKey });
    expect(res.body.agent_id).toBe(b.agentId);
  });

  test('established after 30 days', async () => {
    const fresh = await t.registerAgent();
    t.clock.advanceDays(30);
    const res = await t.request('GET', '/v1/me', { token: fresh.apiKey });
    expect(res.body.trust_levels).toEqual(['floor', 'established']);
  });
});

describe('GET /v1/agents/{agent_id}/passport', () => {
  test('public passport without a key, with every field and no private key', async () => {
    const res = await t.request('GET', `/v1/agents/${a.agentId}/passport`);
    expect(res.status).toBe(200);
    const p = res.body.passport;
    expect(p).toMatchObject({
      did: `did:svc:${a.agentId}`, derivation_method: 'operator_derived', key_algorithm: 'ed25519', suite: 'ed25519',
      revoked_at: null, listed: false, reputation_sub_signal_visibility: 'decomposed', bio: null, skills: [],
    });
    expect(p.public_key.trim()).toBe(a.publicKeyPem.trim());
    expect(p.capabilities.verified).toEqual(expect.arrayContaining(['svc:search', 'svc:memory']));
    expect(p.capabilities.self_reported_notice).toMatch(/never treated as verified/);
    expect(p.reputation).toMatchObject({ score: 0.5, beta_alpha: 1, beta_beta: 1, scoring_model: 'beta_v1', event_count: 0 });
    expect(Object.values(p.reputation_sub_signals).every((v) => v === null)).toBe(true);
    expect(res.raw).not.toMatch(/PRIVATE KEY|api_key|owner_identifier/);
  });

  test('unknown or malformed id → 404 AGENT_NOT_FOUND', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const res = await t.request('GET', `/v1/agents/${id}/passport`);
      expect(res.status).toBe(404);
      expect(res.body.error_code).toBe('AGENT_NOT_FOUND');
    }
  });
});

describe('challenge and session exchange', () => {
  test('challenge fields and canonical payload', async () => {
    const c = await challenge(a.agentId);
    expect(c.challenge_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(c.challenge_nonce.length).toBeGreaterThanOrEqual(43);
    expect(c.sign_payload).toBe(
      ['svc.passport.challenge.v1', `agent_id:${a.agentId}`, `challenge_id:${c.challenge_id}`, `nonce:${c.challenge_nonce}`,
        `issued_at:${c.issued_at}`, `expires_at:${c.expires_at}`].join('\n'),
    );
    expect(Date.parse(c.expires_at) - Date.parse(c.issued_at)).toBe(300_000);
  });

  test('verify gives a svc_session_ token that authenticates for 3600 s, then expires', async () => {
    const token = await session(a);
    expect(token).toMatch(/^svc_session_/);
    const me = await t.request('GET', '/v1/me', { token });
    expect(me.status).toBe(200);
    expect(me.body.agent_id).toBe(a.agentId);
    expect(me.body.authenticated_with.kind).toBe('session');
    t.clock.advanceSeconds(3599);
    expect((await t.request('GET', '/v1/me', { token })).status).toBe(200);
    t.clock.advanceSeconds(1);
    const late = await t.request('GET', '/v1/me', { token });
    expect(late.status).toBe(401);
    expect(late.body.error_code).toBe('INVALID_API_KEY');
  });

  test('a session token does not pass an admin route', async () => {
    const token = await session(a);
    const admin = await t.request('GET', `/admin/agents/${a.agentId}`, { token });
    expect(admin.status).toBe(401);
    expect(admin.body.error_code).toBe('INVALID_ADMIN_KEY');
  });

  test('an agent keeps its 20 newest challenges: calling the public route does not grow the table; the newest still verify', async () => {
    const c = await t.registerAgent();
    const issued = [];
    for (let i = 0; i < 25; i++) {
      issued.push(await challenge(c.agentId));
      t.clock.advanceSeconds(0.001);
    }
    const verify = (ch: any) => t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: c.agentId, challenge_id: ch.challenge_id, signature: signEd25519(c.privateKeyPem, Buffer.from(ch.sign_payload)) } });
    for (const old of issued.slice(0, 5)) expect((await verify(old)).body.error_code).toBe('CHALLENGE_NOT_FOUND'); // trimmed
    expect((await verify(issued[24])).status).toBe(200);
    expect((await verify(issued[5])).status).toBe(200); // the oldest of the 20 kept
  });

  test('nonce is single use', async () => {
    const c = await challenge(a.agentId);
    const body = { agent_id: a.agentId, challenge_id: c.challenge_id, signature: signEd25519(a.privateKeyPem, Buffer.from(c.sign_payload)) };
    expect((await t.request('POST', '/v1/auth/passport/verify', { body })).status).toBe(200);
    const again = await t.request('POST', '/v1/auth/passport/verify', { body });
    expect(again.status).toBe(409);
    expect(again.body.error_code).toBe('CHALLENGE_ALREADY_USED');
  });

  test('expired challenge → 401 CHALLENGE_EXPIRED', async () => {
    const c = await challenge(a.agentId);
    t.clock.advanceSeconds(301);
    const res = await t.request('POST', '/v1/auth/passport/verify', {
      body: { agent_id: a.agentId, challenge_id: c.challenge_id, signature: signEd25519(a.privateKeyPem, Buffer.from(c.sign_payload)) },
    });
    expect(res.status).toBe(401);
    expect(res.body.error_code).toBe('CHALLENGE_EXPIRED');
  });

  test('wrong signature, other agent key, garbage → 401 PASSPORT_SIGNATURE_INVALID', async () => {
    for (const sign of [
      (p: string) => signEd25519(b.privateKeyPem, Buffer.from(p)),
      (p: string) => signEd25519(a.privateKeyPem, Buffer.from(p + 'x')),
      () => Buffer.alloc(64).toString('base64'),
      () => 'not base64 at all',
      () => 'A'.repeat(257), // longer than any signature: invalid, not missing
      () => 'A'.repeat(5000), // however long
    ]) {
      const c = await challenge(a.agentId);
      const res = await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: a.agentId, challenge_id: c.challenge_id, signature: sign(c.sign_payload) } });
      expect(res.status).toBe(401);
      expect(res.body.error_code).toBe('PASSPORT_SIGNATURE_INVALID');
    }
  });

  test("a challenge cannot be redeemed for another agent", async () => {
    const c = await challenge(a.agentId);
    const res = await t.request('POST', '/v1/auth/passport/verify', {
      body: { agent_id: b.agentId, challenge_id: c.challenge_id, signature: signEd25519(b.privateKeyPem, Buffer.from(c.sign_payload)) },
    });
    expect(res.status).toBe(404);
    expect(res.body.error_code).toBe('CHALLENGE_NOT_FOUND');
  });

  test('missing signature → 422 PASSPORT_SIGNATURE_REQUIRED; bad agent id → 422; unknown agent → 404', async () => {
    const c = await challenge(a.agentId);
    const miss = await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: a.agentId, challenge_id: c.challenge_id } });
    expect(miss.status).toBe(422);
    expect(miss.body.error_code).toBe('PASSPORT_SIGNATURE_REQUIRED');
    for (const agent_id of ['nope', `urn:uuid:${a.agentId}`, `{${a.agentId}}`]) {
      const bad = await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id } });
      expect([bad.status, bad.body.error_code], agent_id).toEqual([422, 'INVALID_AGENT_ID']);
    }
    const unknown = await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: '00000000-0000-4000-8000-000000000000' } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error_code).toBe('AGENT_NOT_FOUND');
  });

  test('revoked passport: no challenge, no verify, sessions stop working', async () => {
    const c = await t.registerAgent();
    const token = await session(c);
    const pending = await challenge(c.agentId);
    const viaSession = await t.request('POST', '/v1/me/passport/revoke', { token });
    expect(viaSession.status).toBe(403);
    expect(viaSession.body.error_code).toBe('ROOT_KEY_REQUIRED');
    const rev = await t.request('POST', '/v1/me/passport/revoke', { token: c.apiKey });
    expect(rev.status).toBe(200);
    expect(rev.body.revoked_at).toBe(new Date(t.clock.now()).toISOString());
    const twice = await t.request('POST', '/v1/me/passport/revoke', { token: c.apiKey });
    expect(twice.status).toBe(409);
    const revoked = (await t.request('GET', `/v1/agents/${c.agentId}/passport`)).body.passport;
    expect(revoked.revoked_at).not.toBeNull();
    expect(revoked.capabilities.verified).toEqual([]); // a revoked passport vouches for nothing
    const ch = await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: c.agentId } });
    expect(ch.status).toBe(403);
    expect(ch.body.error_code).toBe('PASSPORT_REVOKED');
    const v = await t.request('POST', '/v1/auth/passport/verify', {
      body: { agent_id: c.agentId, challenge_id: pending.challenge_id, signature: signEd25519(c.privateKeyPem, Buffer.from(pending.sign_payload)) },
    });
    expect(v.status).toBe(403);
    expect(v.body.error_code).toBe('PASSPORT_REVOKED');
    expect((await t.request('GET', '/v1/me', { token })).status).toBe(401);
    expect((await t.request('GET', '/v1/me', { token: c.apiKey })).status).toBe(200);
  });

  test('a key made and a signature produced by the openssl command line are accepted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-openssl-'));
    // openssl needs the private key on disk: the directory goes whatever the outcome.
    try {
      execFileSync('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', join(dir, 'key.pem')]);
      execFileSync('openssl', ['pkey', '-in', join(dir, 'key.pem'), '-pubout', '-out', join(dir, 'pub.pem')]);
      const reg = await t.request('POST', '/v1/register', {
        body: { agent_name: 'openssl-agent', owner_identifier: 'openssl-owner', agree_to_terms: true, passport_public_key: readFileSync(join(dir, 'pub.pem'), 'utf8') },
      });
      expect(reg.status).toBe(201);
      const c = await challenge(reg.body.agent_id);
      writeFileSync(join(dir, 'payload.txt'), c.sign_payload);
      execFileSync('openssl', ['pkeyutl', '-sign', '-rawin', '-inkey', join(dir, 'key.pem'), '-in', join(dir, 'payload.txt'), '-out', join(dir, 'sig.bin')]);
      const signature = readFileSync(join(dir, 'sig.bin')).toString('base64');
      const v = await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: reg.body.agent_id, challenge_id: c.challenge_id, signature } });
      expect(v.status).toBe(200);
      expect((await t.request('GET', '/v1/me', { token: v.body.session_token })).body.agent_id).toBe(reg.body.agent_id);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('POST /v1/agents/passport/description (the directory opt-in)', () => {
  const describeAs = (token: string | undefined, body: unknown) => t.request('POST', '/v1/agents/passport/description', { token, body: body as object });

  test('sets bio, skills, listed and visibility; the public passport and the agent card follow', async () => {
    const c = await t.registerAgent();
    const card = async () => (await t.request('GET', `/v1/agents/${c.agentId}/agent-card`)).body;
    expect((await card()).skills ?? []).not.toContainEqual(expect.objectContaining({ id: 'tide tables' }));
    const res = await describeAs(c.apiKey, { bio: 'Reads tide tables for harbours.', skills: ['tide tables', 'c++'], listed: true, reputation_sub_signal_visibility: 'aggregate_only' });
    expect(res.status).toBe(200);
    expect(res.body.passport).toMatchObject({ bio: 'Reads tide tables for harbours.', skills: ['tide tables', 'c++'], listed: true, reputation_sub_signal_visibility: 'aggregate_only' });
    expect(res.body.passport).not.toHaveProperty('reputation_sub_signals');
    expect(res.body.agent_card_url).toBe(`${t.config.core.baseUrl}/v1/agents/${c.agentId}/agent-card`);
    const full = await card();
    expect(full.description).toBe('Reads tide tables for harbours.');
    expect(full.skills.map((s: any) => s.id)).toEqual(['tide tables', 'c++']);
    // Only what is sent changes; a null bio clears it and the card is minimal again.
    const partial = await describeAs(c.apiKey, { bio: null });
    expect(partial.body.passport).toMatchObject({ bio: null, skills: ['tide tables', 'c++'], listed: true });
    expect((await card()).description).not.toBe('Reads tide tables for harbours.');
    // A session token is a key too.
    expect((await describeAs(await session(c), { listed: false })).body.passport.listed).toBe(false);
  });

  test('422 for each bad field; 401 without a key; 403 PASSPORT_REVOKED once revoked; nothing changes', async () => {
    const c = await t.registerAgent();
    for (const body of [
      {}, { bio: 'é not ascii' }, { bio: 'x'.repeat(501) }, { skills: 'one' }, { skills: [''] }, { skills: ['a', 'a'] },
      { skills: Array.from({ length: 33 }, (_, i) => `s${i}`) }, { skills: ['-leading'] }, { listed: 'true' },
      { reputation_sub_signal_visibility: 'hidden' },
    ]) {
      const res = await describeAs(c.apiKey, body);
      expect([res.status, res.body.error_code], JSON.stringify(body).slice(0, 60)).toEqual([422, 'VALIDATION_FAILED']);
    }
    expect((await describeAs(c.apiKey, { bio: 'x'.repeat(500) })).status).toBe(200);
    expect((await describeAs(undefined, { listed: true })).body.error_code).toBe('INVALID_API_KEY');
    expect((await describeAs('svc_wrong', { listed: true })).status).toBe(401);
    await t.request('POST', '/v1/me/passport/revoke', { token: c.apiKey });
    const after = await describeAs(c.apiKey, { listed: true });
    expect([after.status, after.body.error_code]).toEqual([403, 'PASSPORT_REVOKED']);
    expect((await t.request('GET', `/v1/agents/${c.agentId}/passport`)).body.passport.listed).toBe(false);
  });

  test('an agent changes only its own description', async () => {
    const c = await t.registerAgent();
    const d = await t.registerAgent();
    await describeAs(c.apiKey, { bio: 'Mine.', listed: true });
    expect((await t.request('GET', `/v1/agents/${d.agentId}/passport`)).body.passport).toMatchObject({ bio: null, listed: false });
  });

  test('the answers that carry a key or token are not cacheable', async () => {
    const reg = await t.request('POST', '/v1/register', { body: { agent_name: 'no-store', owner_identifier: 'o-no-store', agree_to_terms: true } });
    expect(reg.headers['cache-control']).toBe('no-store');
    const c = await t.registerAgent();
    const ch = await challenge(c.agentId);
    const v = await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: c.agentId, challenge_id: ch.challenge_id, signature: signEd25519(c.privateKeyPem, Buffer.from(ch.sign_payload)) } });
    expect(v.status).toBe(200);
    expect(v.headers['cache-control']).toBe('no-store');
  });
});

describe('admin auth', () => {
  test('X-Admin-Key is required and compared exactly', async () => {
    const ok = await t.request('GET', `/admin/agents/${a.agentId}`, { headers: { 'x-admin-key': 'test-admin-key' } });
    expect(ok.status).toBe(200);
    expect(ok.body.agent.agent_id).toBe(a.agentId);
    for (const headers of [{}, { 'x-admin-key': 'test-admin-ke' }, { 'x-admin-key': 'test-admin-keyy' }, { authorization: `Bearer ${a.apiKey}` }] as Record<string, string>[]) {
      const res = await t.request('GET', `/admin/agents/${a.agentId}`, { headers });
      expect(res.status).toBe(401);
      expect(res.body.error_code).toBe('INVALID_ADMIN_KEY');
    }
    const missing = await t.request('GET', '/admin/agents/00000000-0000-4000-8000-000000000000', { headers: { 'x-admin-key': 'test-admin-key' } });
    expect(missing.status).toBe(404);
  });

  test('without SVC_ADMIN_KEY admin routes answer 503 ADMIN_NOT_CONFIGURED', async () => {
    const other = await startTestApp({ env: { SVC_ADMIN_KEY: '' } });
    try {
      const res = await other.request('GET', `/admin/agents/${a.agentId}`, { headers: { 'x-admin-key': 'anything' } });
      expect(res.status).toBe(503);
      expect(res.body.error_code).toBe('ADMIN_NOT_CONFIGURED');
    } finally {
      await other.close();
    }
  });
});

describe('health and errors', () => {
  test('GET /health → status and version 4.4.1', async () => {
    const res = await t.request('GET', '/health');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', version: '4.4.1' });
  });

  test('unknown route → JSON 404', async () => {
    const res = await t.request('GET', '/v1/does-not-exist');
    expect(res.status).toBe(404);
    expect(res.body.error_code).toBe('ROUTE_NOT_FOUND');
  });

  test('body over the limit → 413 PAYLOAD_TOO_LARGE', async () => {
    const res = await t.request('POST', '/v1/register', { body: { agent_name: 'x', owner_identifier: 'y'.repeat(2_000_000), agree_to_terms: true } });
    expect(res.status).toBe(413);
    expect(res.body.error_code).toBe('PAYLOAD_TOO_LARGE');
  });
});
