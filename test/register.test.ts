import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generateEd25519 } from '../src/lib/ed25519';
import { hmacHex } from '../src/lib/hash';
import { startTestApp, type TestApp } from './helpers/harness';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { SVC_AFFILIATION_SECRET: 'aff-secret' } });
});
afterAll(async () => t?.close());

const base = (n: string, extra: Record<string, unknown> = {}) => ({
  agent_name: n, owner_identifier: `owner-of-${n}`, agree_to_terms: true, ...extra,
});

describe('POST /v1/register', () => {
  test('generates a keypair when none is given, returns it once with a warning', async () => {
    const res = await t.request('POST', '/v1/register', { body: base('gen_agent-1') });
    expect(res.status).toBe(201);
    const b = res.body;
    expect(b.api_key).toMatch(/^svc_[A-Za-z0-9_-]{43,}$/);
    expect(b.agent_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(b.passport.did).toBe(`did:svc:${b.agent_id}`);
    expect(b.passport.public_key).toContain('BEGIN PUBLIC KEY');
    expect(b.passport.private_key).toContain('BEGIN PRIVATE KEY');
    expect(b.passport.derivation_method).toBe('service_generated');
    expect(b.key_generation_warning).toMatch(/not stored/);
    expect(b.directory_opt_in_url).toContain('/v1/agents/passport/description');
    expect(typeof b.directory_value).toBe('string');
    expect(b.a2a_agent_card_url).toContain(`/v1/agents/${b.agent_id}/agent-card`);
    for (const f of ['served_by', 'register_url', 'discover_url', 'guide_url', 'feedback_url', 'browse_url', 'terms_url', 'terms_version', 'tier_description', 'community']) {
      expect(b._svc).toHaveProperty(f);
    }
    expect(b._svc.community.agents_registered).toBeGreaterThanOrEqual(1);
    // The private key is never stored: the public passport does not carry it, nor does /v1/me.
    const pass = await t.request('GET', `/v1/agents/${b.agent_id}/passport`);
    expect(pass.raw).not.toContain('PRIVATE KEY');
    const me = await t.request('GET', '/v1/me', { token: b.api_key });
    expect(me.raw).not.toContain('PRIVATE KEY');
    expect(me.raw).not.toContain(b.api_key);
  });

  test('only the SHA-256 digest of the key is stored', async () => {
    const res = await t.request('POST', '/v1/register', { body: base('digest-check') });
    const rows = await t.app.inject({ method: 'GET', url: '/health' }); // keep the app warm
    expect(rows.statusCode).toBe(200);
    const { createHash } = await import('node:crypto');
    const digest = createHash('sha256').update(res.body.api_key).digest('hex');
    const { openDatabase } = await import('../src/infra/db/database');
    const h = openDatabase({ databaseUrl: t.config.core.databaseUrl, dataDir: t.config.core.dataDir, poolMax: 1 });
    try {
      if (t.db.engine === 'postgres' && !process.env.SVC_TEST_PG) return; // PGlite takes one connection: the app holds it
      const keys = await h.db.selectFrom('api_keys').select(['key_hash']).where('agent_id', '=', res.body.agent_id).execute();
      expect(keys.map((k) => k.key_hash)).toEqual([digest]);
      const all = await h.db.selectFrom('api_keys').selectAll().execute();
      expect(JSON.stringify(all)).not.toContain(res.body.api_key);
    } finally {
      await h.close();
    }
  });

  test('accepts a PEM SPKI public key and a base64 raw key', async () => {
    const k = generateEd25519();
    const pem = await t.request('POST', '/v1/register', { body: base('pem-agent', { passport_public_key: k.publicKeyPem }) });
    expect(pem.status).toBe(201);
    expect(pem.body.passport.private_key).toBeNull();
    expect(pem.body.passport.derivation_method).toBe('operator_derived');
    expect(pem.body.key_generation_warning).toBeUndefined();
    expect(pem.body.passport.public_key.trim()).toBe(k.publicKeyPem.trim());

    const { publicKey } = generateKeyPairSync('ed25519');
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('base64');
    const r = await t.request('POST', '/v1/register', { body: base('raw-agent', { passport_public_key: raw }) });
    expect(r.status).toBe(201);
    expect(r.body.passport.public_key.trim()).toBe(publicKey.export({ format: 'pem', type: 'spki' }).toString().trim());
  });

  test.each([
    ['not base64 !!!', 'INVALID_PASSPORT_PUBLIC_KEY'],
    [Buffer.alloc(31, 1).toString('base64'), 'INVALID_PASSPORT_PUBLIC_KEY'],
    ['-----BEGIN PUBLIC KEY-----\ngarbage\n-----END PUBLIC KEY-----', 'INVALID_PASSPORT_PUBLIC_KEY'],
  ])('refuses a bad passport key %#', async (key, code) => {
    const res = await t.request('POST', '/v1/register', { body: base('badkey', { passport_public_key: key }) });
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe(code);
  });

  test('refuses a key of small order (the neutral point: any R = B, S = 1 would verify for it)', async () => {
    const neutral = Buffer.alloc(32);
    neutral[0] = 1;
    const res = await t.request('POST', '/v1/register', { body: base('neutral-key', { passport_public_key: neutral.toString('base64') }) });
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe('INVALID_PASSPORT_PUBLIC_KEY');
    expect(res.body.message).toMatch(/small order/);
  });

  test('refuses a private key sent as the public key (passport or recovery), and stores nothing', async () => {
    const pair = generateEd25519();
    const res = await t.request('POST', '/v1/register', { body: base('sent-private', { passport_public_key: pair.privateKeyPem }) });
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe('INVALID_PASSPORT_PUBLIC_KEY');
    expect(res.body.message).toMatch(/private key/);
    const rec = await t.request('POST', '/v1/register', { body: base('sent-private', { recovery_public_key: pair.privateKeyPem }) });
    expect(rec.status).toBe(422);
    expect(rec.body.error_code).toBe('INVALID_RECOVERY_PUBLIC_KEY');
    const ok = await t.request('POST', '/v1/register', { body: base('sent-private', { passport_public_key: pair.publicKeyPem }) });
    expect(ok.status).toBe(201);
  });

  test('refuses a non-Ed25519 (RSA) PEM key with a clear message', async () => {
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const pem = publicKey.export({ format: 'pem', type: 'spki' }).toString();
    const res = await t.request('POST', '/v1/register', { body: base('rsa-agent', { passport_public_key: pem }) });
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe('INVALID_PASSPORT_PUBLIC_KEY');
    expect(res.body.message).toMatch(/Ed25519/);
  });

  test.each([
    [{ agent_name: 'has space' }, 'INVALID_AGENT_NAME'],
    [{ agent_name: 'dots.not.allowed' }, 'INVALID_AGENT_NAME'],
    [{ agent_name: '' }, 'INVALID_AGENT_NAME'],
    [{ agent_name: 'x'.repeat(65) }, 'INVALID_AGENT_NAME'],
    [{ agent_name: undefined }, 'INVALID_AGENT_NAME'],
    [{ owner_identifier: undefined }, 'INVALID_OWNER_IDENTIFIER'],
    [{ owner_identifier: '' }, 'INVALID_OWNER_IDENTIFIER'],
    [{ owner_identifier: ' \t ' }, 'INVALID_OWNER_IDENTIFIER'],
    [{ agree_to_terms: false }, 'TERMS_NOT_ACCEPTED'],
    [{ agree_to_terms: undefined }, 'TERMS_NOT_ACCEPTED'],
    [{ referral_agent: 'not-a-uuid' }, 'INVALID_REFERRAL_AGENT'],
    [{ registration_source: 'x'.repeat(65) }, 'REGISTRATION_SOURCE_TOO_LONG'],
    [{ recovery_public_key: 'abc' }, 'INVALID_RECOVERY_PUBLIC_KEY'],
    [{ agent_card_url: 'http://example.com/card.json' }, 'AGENT_CARD_URL_INVALID'],
    [{ agent_card_url: 'https://127.0.0.1/card.json' }, 'AGENT_CARD_URL_INVALID'],
    [{ agent_card_url: 'https://localhost/card.json' }, 'AGENT_CARD_URL_INVALID'],
    [{ agent_card_url: 'not a url' }, 'AGENT_CARD_URL_INVALID'],
    [{ agent_card_url: 'https://localhost./card.json' }, 'AGENT_CARD_URL_INVALID'],
    [{ agent_card_url: 'https://foo.localhost../card.json' }, 'AGENT_CARD_URL_INVALID'],
    [{ agent_card_url: 'https://example./card.json' }, 'AGENT_CARD_URL_INVALID'],
    [{ registration_source: null }, 'VALIDATION_FAILED'],
    [{ registration_source: 7 }, 'VALIDATION_FAILED'],
  ])('validation %# → %s', async (patch, code) => {
    const body: Record<string, unknown> = { ...base('valid-name'), ...patch };
    for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
    const res = await t.request('POST', '/v1/register', { body });
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe(code);
    expect(typeof res.body.message).toBe('string');
  });

  test('registration_source of exactly 64 characters is accepted', async () => {
    const res = await t.request('POST', '/v1/register', { body: base('src64', { registration_source: 's'.repeat(64) }) });
    expect(res.status).toBe(201);
  });

  test('same (agent_name, owner_identifier) again → 409 AGENT_ALREADY_REGISTERED; other owner is fine', async () => {
    expect((await t.request('POST', '/v1/register', { body: base('dupe') })).status).toBe(201);
    const again = await t.request('POST', '/v1/register', { body: base('dupe') });
    expect(again.status).toBe(409);
    expect(again.body.error_code).toBe('AGENT_ALREADY_REGISTERED');
    const other = await t.request('POST', '/v1/register', { body: { ...base('dupe'), owner_identifier: 'someone-else' } });
    expect(other.status).toBe(201);
  });

  test('recovery key enrols recovery and binds the owner-recovery-key covenant', async () => {
    const rk = generateEd25519();
    const res = await t.request('POST', '/v1/register', { body: base('with-recovery', { recovery_public_key: rk.publicKeyPem }) });
    expect(res.status).toBe(201);
    expect(res.body.recovery).toMatchObject({ enrolled: true, covenant_template_id: 'owner-recovery-key' });
    const me = await t.request('GET', '/v1/me', { token: res.body.api_key });
    expect(me.body.recovery_enrolled).toBe(true);
    expect(me.body.covenant_template_id).toBe('owner-recovery-key');
  });

  test('referral: recorded as deferred; same owner excluded; unknown referrer excluded', async () => {
    const referrer = await t.registerAgent();
    const referred = await t.request('POST', '/v1/register', { body: base('referred-1', { referral_agent: referrer.agentId }) });
    expect(referred.body.referral).toMatchObject({ referrer_agent_id: referrer.agentId, status: 'deferred' });
    const me = await t.request('GET', '/v1/me', { token: referred.body.api_key });
    expect(me.body.referral_agent).toBe(referrer.agentId);
    expect(me.body.referral_status).toBe('deferred');

    const ownerOfReferrer = referrer.body.passport ? (await t.request('GET', '/v1/me', { token: referrer.apiKey })).body.owner_identifier : '';
    const same = await t.request('POST', '/v1/register', {
      body: { agent_name: 'sibling', owner_identifier: ownerOfReferrer, agree_to_terms: true, referral_agent: referrer.agentId },
    });
    expect(same.body.referral).toMatchObject({ status: 'excluded', reason: 'same_owner' });

    const unknown = await t.request('POST', '/v1/register', { body: base('referred-2', { referral_agent: '00000000-0000-4000-8000-000000000000' }) });
    expect(unknown.status).toBe(201);
    expect(unknown.body.referral).toMatchObject({ status: 'excluded', reason: 'unknown_referrer' });
  });

  test('declared_affiliation_token: valid recorded, invalid ignored', async () => {
    const good = await t.request('POST', '/v1/register', { body: base('aff-good', { declared_affiliation_token: `acme.${hmacHex('aff-secret', 'acme')}` }) });
    expect(good.status).toBe(201);
    expect((await t.request('GET', '/v1/me', { token: good.body.api_key })).body.affiliation).toBe('acme');
    const bad = await t.request('POST', '/v1/register', { body: base('aff-bad', { declared_affiliation_token: 'acme.deadbeef' }) });
    expect(bad.status).toBe(201);
    expect((await t.request('GET', '/v1/me', { token: bad.body.api_key })).body.affiliation).toBeNull();
  });

  test('agent_card_url https public host accepted and shown on /v1/me', async () => {
    const res = await t.request('POST', '/v1/register', { body: base('card-agent', { agent_card_url: 'https://agents.example.com/card.json' }) });
    expect(res.status).toBe(201);
    expect((await t.request('GET', '/v1/me', { token: res.body.api_key })).body.agent_card_url).toBe('https://agents.example.com/card.json');
  });

  test('malformed JSON and wrong content type are refused with codes, not 500', async () => {
    const bad = await t.request('POST', '/v1/register', { body: '{"agent_name":', headers: { 'content-type': 'application/json' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error_code).toBe('INVALID_JSON');
    const text = await t.request('POST', '/v1/register', { body: 'hello', headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
    expect(text.body.error_code).toBe('UNSUPPORTED_MEDIA_TYPE');
    const arr = await t.request('POST', '/v1/register', { body: [1, 2] });
    expect(arr.status).toBe(422);
  });
});
