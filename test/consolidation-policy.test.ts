/**
 * Consolidation policy over HTTP: amend with a passport signature (node:crypto and openssl), the
 * root and public reads, every error code (template, params, signature, challenge, forbidden),
 * security (no key, wrong key, scoped key and session on root routes, another agent's challenge),
 * a signature replayed onto other params, the trust log entry (its proof checked by hand) and parity.
 */
import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';
import { challengeFor, jcs, schemeBytes, signedBody, signWithNode, signWithOpenssl } from './helpers/signed-requests';

const SCHEME = 'svc.consolidation.amend.v1';
const ADMIN = { 'x-admin-key': 'test-admin-key' };
const UNKNOWN = '00000000-0000-4000-8000-000000000000';
let t: TestApp;

const PARAMS = {
  schema_version: 1,
  compression: { strategy: 'summarize', target_ratio: 0.25, min_age_days: 7 },
  weighting: { recency: 0.4, importance: 0.3, access_frequency: 0.2, confidence: 0.1 },
  fade_rules: [{ importance: 'low', after_days: 30, action: 'compress' }, { importance: 'low', after_days: 180, action: 'forget' }],
};
// Explicit arguments, undefined included (a field left out of the body).
const content = (...args: unknown[]) => ({ template_id: args.length > 1 ? args[1] : 'consolidation-v1', params: args.length > 0 ? args[0] : PARAMS });
const amend = (a: { apiKey: string }, body: unknown) => t.request('POST', '/v1/me/consolidation-policy/amend', { token: a.apiKey, body });
const codeOf = (r: { status: number; body: any }) => [r.status, r.body?.error_code];

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('consolidation policy: amend and read', () => {
  test('none declared yet: 404 CONSOLIDATION_POLICY_NOT_FOUND on both reads', async () => {
    const a = await t.registerAgent();
    expect(codeOf(await t.request('GET', '/v1/me/consolidation-policy', { token: a.apiKey }))).toEqual([404, 'CONSOLIDATION_POLICY_NOT_FOUND']);
    expect(codeOf(await t.request('GET', `/v1/agents/${a.agentId}/consolidation-policy`))).toEqual([404, 'CONSOLIDATION_POLICY_NOT_FOUND']);
  });

  test('an amend signed with node:crypto, then one signed by openssl: versions 1 and 2, declared_at set by svc, both reads agree', async () => {
    const a = await t.registerAgent();
    const first = await amend(a, await signedBody(t, a, SCHEME, content()));
    expect(first.status).toBe(200);
    const at = new Date(t.clock.now()).toISOString();
    expect(first.body.policy).toMatchObject({
      agent_id: a.agentId, template_id: 'consolidation-v1', version: 1, declared_at: at, recorded_only: true,
      params: { ...PARAMS, declared_at: at },
    });
    expect(first.body.policy.notice).toMatch(/no consolidation engine/);

    t.clock.advance(60_000);
    const changed = { ...PARAMS, compression: { strategy: 'none', target_ratio: 1, min_age_days: 0 }, fade_rules: [] };
    const second = await amend(a, await signedBody(t, a, SCHEME, content(changed), 'openssl'));
    expect(second.status).toBe(200);
    expect(second.body.policy).toMatchObject({ version: 2, params: { ...changed, declared_at: new Date(t.clock.now()).toISOString() } });
    expect(second.body.policy.log_index).toBeGreaterThan(first.body.policy.log_index);

    const mine = await t.request('GET', '/v1/me/consolidation-policy', { token: a.apiKey });
    const pub = await t.request('GET', `/v1/agents/${a.agentId.toUpperCase()}/consolidation-policy`);
    expect(mine.status).toBe(200);
    expect(pub.body).toEqual(mine.body);
    expect(mine.body.policy).toEqual(second.body.policy);
  });

  test('the log entry carries the declaration and its proof: the signed bytes rebuilt from the entry verify against the passport key', async () => {
    const a = await t.registerAgent();
    const r = await amend(a, await signedBody(t, a, SCHEME, content()));
    const i = r.body.policy.log_index;
    const e = (await t.request('GET', `/v1/trust/log/entries?start=${i}&end=${i + 1}`)).body.entries[0].entry;
    expect(e).toMatchObject({ kind: 'consolidation.amended', agent_id: a.agentId, epoch: 1, data: { template_id: 'consolidation-v1', version: 1, params: PARAMS } });
    const proof = e.data.proof;
    expect(proof.scheme).toBe(SCHEME);
    expect(proof.public_key_sha256).toBe(createHash('sha256').update(createPublicKey(a.publicKeyPem).export({ format: 'der', type: 'spki' })).digest('hex'));
    const bytes = schemeBytes(SCHEME, a.agentId, proof.challenge_id, proof.nonce, { template_id: e.data.template_id, params: e.data.params });
    expect(verify(null, Buffer.from(bytes), createPublicKey(a.publicKeyPem), Buffer.from(proof.signature, 'base64'))).toBe(true);
  });

  test('key order and number spelling do not matter: the signature covers the RFC 8785 bytes', async () => {
    const a = await t.registerAgent();
    const c = await challengeFor(t, a.agentId);
    const bytes = schemeBytes(SCHEME, a.agentId, c.challenge_id, c.challenge_nonce, content());
    // The same params, keys in another order and 0.25 written as 2.5e-1.
    const raw = `{"passport_signature":"${signWithNode(a.privateKeyPem, bytes)}","challenge_id":"${c.challenge_id}","params":{"weighting":{"confidence":0.1,"access_frequency":0.2,"importance":0.3,"recency":0.4},`
      + '"fade_rules":[{"action":"compress","after_days":30,"importance":"low"},{"importance":"low","after_days":180,"action":"forget"}],'
      + '"compression":{"min_age_days":7,"target_ratio":2.5e-1,"strategy":"summarize"},"schema_version":1},"template_id":"consolidation-v1"}';
    const r = await t.request('POST', '/v1/me/consolidation-policy/amend', { token: a.apiKey, body: raw, headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(200);
  });
});

describe('consolidation policy: refusals', () => {
  let a: RegisteredAgent;
  beforeAll(async () => {
    a = await t.registerAgent();
  });

  test('422 CONSOLIDATION_POLICY_TEMPLATE_INVALID: missing, another template, not a string', async () => {
    for (const template_id of [undefined, 'consolidation-v2', 'owner-recovery-key', 1, null]) {
      const r = await amend(a, await signedBody(t, a, SCHEME, content(PARAMS, template_id)));
      expect(codeOf(r), JSON.stringify(template_id)).toEqual([422, 'CONSOLIDATION_POLICY_TEMPLATE_INVALID']);
    }
  });

  test('422 CONSOLIDATION_POLICY_PARAMS_INVALID: each broken rule, naming where; the challenge is not spent by it', async () => {
    const cases: [string, unknown, RegExp][] = [
      ['missing', undefined, /\//],
      ['not an object', [1], /\//],
      ['declared_at sent', { ...PARAMS, declared_at: '2020-01-01T00:00:00Z' }, /declared_at is set by svc/],
      ['schema_version 2', { ...PARAMS, schema_version: 2 }, /\/schema_version/],
      ['an extra field', { ...PARAMS, engine: 'mine' }, /engine/],
      ['compression missing', { ...PARAMS, compression: undefined }, /compression/],
      ['unknown strategy', { ...PARAMS, compression: { ...PARAMS.compression, strategy: 'zip' } }, /\/compression\/strategy/],
      ['target_ratio 0', { ...PARAMS, compression: { ...PARAMS.compression, target_ratio: 0 } }, /target_ratio/],
      ['target_ratio over 1', { ...PARAMS, compression: { ...PARAMS.compression, target_ratio: 1.5 } }, /target_ratio/],
      ['strategy none with a ratio under 1', { ...PARAMS, compression: { strategy: 'none', target_ratio: 0.5, min_age_days: 0 } }, /must be 1 when strategy is none/],
      ['min_age_days not an integer', { ...PARAMS, compression: { ...PARAMS.compression, min_age_days: 1.5 } }, /min_age_days/],
      ['weights that do not sum to 1', { ...PARAMS, weighting: { recency: 0.5, importance: 0.5, access_frequency: 0.5, confidence: 0 } }, /sum to 1/],
      ['a weight missing', { ...PARAMS, weighting: { recency: 1, importance: 0, access_frequency: 0 } }, /weighting/],
      ['a negative weight', { ...PARAMS, weighting: { recency: 1.2, importance: -0.2, access_frequency: 0, confidence: 0 } }, /importance/],
      ['a weight as a string', { ...PARAMS, weighting: { ...PARAMS.weighting, recency: '0.4' } }, /recency/],
      ['two compress rules for low', { ...PARAMS, fade_rules: [PARAMS.fade_rules[0], { importance: 'low', after_days: 60, action: 'compress' }] }, /second compress rule/],
      ['forget before compress', { ...PARAMS, fade_rules: [{ importance: 'high', after_days: 90, action: 'compress' }, { importance: 'high', after_days: 30, action: 'forget' }] }, /must come after/],
      ['unknown importance', { ...PARAMS, fade_rules: [{ importance: 'urgent', after_days: 1, action: 'forget' }] }, /importance/],
      ['after_days 0', { ...PARAMS, fade_rules: [{ importance: 'low', after_days: 0, action: 'forget' }] }, /after_days/],
      ['17 rules', { ...PARAMS, fade_rules: Array.from({ length: 17 }, (_, i) => ({ importance: 'low', after_days: i + 1, action: 'archive' })) }, /fade_rules/],
    ];
    const c = await challengeFor(t, a.agentId);
    for (const [what, params, message] of cases) {
      const body = { ...content(params), challenge_id: c.challenge_id, passport_signature: signWithNode(a.privateKeyPem, schemeBytes(SCHEME, a.agentId, c.challenge_id, c.challenge_nonce, content(params))) };
      const r = await amend(a, body);
      expect(codeOf(r), what).toEqual([422, 'CONSOLIDATION_POLICY_PARAMS_INVALID']);
      expect(r.body.message, what).toMatch(message);
    }
    // Refused before the signature check: the challenge still signs a valid amend.
    const ok = await amend(a, { ...content(), challenge_id: c.challenge_id, passport_signature: signWithNode(a.privateKeyPem, schemeBytes(SCHEME, a.agentId, c.challenge_id, c.challenge_nonce, content())) });
    expect(ok.status).toBe(200);
  });

  test('422 PASSPORT_SIGNATURE_REQUIRED: challenge_id or passport_signature missing, empty or not a string', async () => {
    const good = await signedBody(t, a, SCHEME, content());
    const variants: [string, Record<string, unknown>][] = [
      ['no challenge_id', { ...good, challenge_id: undefined }],
      ['no signature', { ...good, passport_signature: undefined }],
      ['neither', content()],
      ['empty signature', { ...good, passport_signature: '' }],
      ['blank challenge_id', { ...good, challenge_id: '  ' }],
      ['signature not a string', { ...good, passport_signature: 42 }],
      ['challenge_id an object', { ...good, challenge_id: { id: good.challenge_id } }],
    ];
    for (const [what, body] of variants) expect(codeOf(await amend(a, body)), what).toEqual([422, 'PASSPORT_SIGNATURE_REQUIRED']);
  });

  test('401 PASSPORT_SIGNATURE_INVALID: another key, other params (a replay), another scheme, another agent id, garbage', async () => {
    const other = await t.registerAgent();
    const sign = async (key: string, scheme: string, signedContent: unknown, agentId = a.agentId) => {
      const c = await challengeFor(t, a.agentId);
      return { challenge_id: c.challenge_id, passport_signature: signWithNode(key, schemeBytes(scheme, agentId, c.challenge_id, c.challenge_nonce, signedContent)) };
    };
    const otherParams = { ...PARAMS, compression: { ...PARAMS.compression, target_ratio: 0.5 } };
    const cases: [string, Record<string, unknown>][] = [
      ['signed by another agent\'s key', { ...content(), ...await sign(other.privateKeyPem, SCHEME, content()) }],
      ['signed over other params, sent with these', { ...content(), ...await sign(a.privateKeyPem, SCHEME, content(otherParams)) }],
      ['signed under the policy binding scheme', { ...content(), ...await sign(a.privateKeyPem, 'svc.policy_binding.amend.v1', content()) }],
      ['signed for another agent id', { ...content(), ...await sign(a.privateKeyPem, SCHEME, content(), other.agentId) }],
      ['not base64', { ...content(), challenge_id: (await challengeFor(t, a.agentId)).challenge_id, passport_signature: '!!not-base64!!' }],
      ['63 bytes', { ...content(), challenge_id: (await challengeFor(t, a.agentId)).challenge_id, passport_signature: Buffer.alloc(63).toString('base64') }],
    ];
    for (const [what, body] of cases) {
      const r = await amend(a, body);
      expect(codeOf(r), what).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    }
    // A valid amend, then its exact body replayed: the challenge is spent.
    const body = await signedBody(t, a, SCHEME, content());
    expect((await amend(a, body)).status).toBe(200);
    expect(codeOf(await amend(a, body))).toEqual([409, 'CHALLENGE_ALREADY_USED']);
    // A failed attempt spends its challenge too (single use whatever the outcome).
    const c = await challengeFor(t, a.agentId);
    const wrong = { ...content(), challenge_id: c.challenge_id, passport_signature: signWithNode(other.privateKeyPem, schemeBytes(SCHEME, a.agentId, c.challenge_id, c.challenge_nonce, content())) };
    expect(codeOf(await amend(a, wrong))).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    const right = { ...wrong, passport_signature: signWithNode(a.privateKeyPem, schemeBytes(SCHEME, a.agentId, c.challenge_id, c.challenge_nonce, content())) };
    expect(codeOf(await amend(a, right))).toEqual([409, 'CHALLENGE_ALREADY_USED']);
  });

  test('challenges: unknown or malformed 404, another agent\'s 404, expired 401', async () => {
    const other = await t.registerAgent();
    const sig = 'A'.repeat(86) + '==';
    expect(codeOf(await amend(a, { ...content(), challenge_id: UNKNOWN, passport_signature: sig }))).toEqual([404, 'CHALLENGE_NOT_FOUND']);
    expect(codeOf(await amend(a, { ...content(), challenge_id: 'not-a-uuid', passport_signature: sig }))).toEqual([404, 'CHALLENGE_NOT_FOUND']);
    // Another agent's challenge, even signed by that agent's key over these bytes: not this agent's.
    const theirs = await signedBody(t, other, SCHEME, content());
    expect(codeOf(await amend(a, theirs))).toEqual([404, 'CHALLENGE_NOT_FOUND']);
    const c = await challengeFor(t, a.agentId);
    t.clock.advance((t.config.core.challengeTtlSeconds + 1) * 1000);
    const late = { ...content(), challenge_id: c.challenge_id, passport_signature: signWithNode(a.privateKeyPem, schemeBytes(SCHEME, a.agentId, c.challenge_id, c.challenge_nonce, content())) };
    expect(codeOf(await amend(a, late))).toEqual([401, 'CHALLENGE_EXPIRED']);
  });

  test('403 CONSOLIDATION_POLICY_AMEND_FORBIDDEN while the agent is frozen; 403 PASSPORT_REVOKED once the passport is revoked', async () => {
    const f = await t.registerAgent();
    await t.database.db.updateTable('agents').set({ frozen: 1 }).where('agent_id', '=', f.agentId).execute();
    const r = await amend(f, await signedBody(t, f, SCHEME, content()));
    expect(codeOf(r)).toEqual([403, 'CONSOLIDATION_POLICY_AMEND_FORBIDDEN']);
    expect(r.body.reason).toBe('frozen');
    await t.database.db.updateTable('agents').set({ frozen: 0 }).where('agent_id', '=', f.agentId).execute();
    expect((await amend(f, await signedBody(t, f, SCHEME, content()))).status).toBe(200);

    const v = await t.registerAgent();
    const body = await signedBody(t, v, SCHEME, content()); // the challenge is taken before the revocation
    expect((await t.request('POST', '/v1/me/passport/revoke', { token: v.apiKey })).status).toBe(200);
    expect(codeOf(await amend(v, body))).toEqual([403, 'PASSPORT_REVOKED']);
  });
});

describe('consolidation policy: security', () => {
  test('no key, a wrong key: 401; a scoped key and a passport session on the root routes: 403 ROOT_KEY_REQUIRED', async () => {
    const a = await t.registerAgent();
    const body = await signedBody(t, a, SCHEME, content());
    for (const headers of [{}, { authorization: 'Bearer svc_wrong' }] as Record<string, string>[]) {
      expect(codeOf(await t.request('GET', '/v1/me/consolidation-policy', { headers }))).toEqual([401, 'INVALID_API_KEY']);
      expect(codeOf(await t.request('POST', '/v1/me/consolidation-policy/amend', { headers, body }))).toEqual([401, 'INVALID_API_KEY']);
    }
    const scoped = (await t.request('POST', '/v1/me/keys', { token: a.apiKey, body: { scopes: ['svc:memory', 'svc:search'] } })).body.api_key;
    // A passport session, the challenge signed by openssl.
    const c = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
    const token = (await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: a.agentId, challenge_id: c.challenge_id, signature: signWithOpenssl(a.privateKeyPem, c.sign_payload) } })).body.session_token;
    expect(token).toMatch(/^svc_session_/);
    for (const key of [scoped, token]) {
      expect(codeOf(await t.request('GET', '/v1/me/consolidation-policy', { token: key }))).toEqual([403, 'ROOT_KEY_REQUIRED']);
      expect(codeOf(await t.request('POST', '/v1/me/consolidation-policy/amend', { token: key, body }))).toEqual([403, 'ROOT_KEY_REQUIRED']);
    }
    // The body was never used: the root key amends with it.
    expect((await amend(a, body)).status).toBe(200);
  });

  test('the public read: unknown or malformed agent 404 AGENT_NOT_FOUND; one agent\'s amend never touches another\'s policy', async () => {
    for (const id of [UNKNOWN, 'nope']) expect(codeOf(await t.request('GET', `/v1/agents/${id}/consolidation-policy`))).toEqual([404, 'AGENT_NOT_FOUND']);
    const a = await t.registerAgent();
    const b = await t.registerAgent();
    expect((await amend(a, await signedBody(t, a, SCHEME, content()))).status).toBe(200);
    // b's root key with a's signed body: a's challenge is not b's.
    expect(codeOf(await amend(b, await signedBody(t, a, SCHEME, content())))).toEqual([404, 'CHALLENGE_NOT_FOUND']);
    expect(codeOf(await t.request('GET', '/v1/me/consolidation-policy', { token: b.apiKey }))).toEqual([404, 'CONSOLIDATION_POLICY_NOT_FOUND']);
    expect((await t.request('GET', `/v1/agents/${a.agentId}/consolidation-policy`)).body.policy.version).toBe(1);
  });
});

describe('parity', () => {
  test('the parity check replays the amends; a policy row changed behind svc\'s back is reported', async () => {
    const a = await t.registerAgent();
    const r = await amend(a, await signedBody(t, a, SCHEME, content()));
    const clean = await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN });
    expect([clean.body.ok, clean.body.mismatch_count]).toEqual([true, 0]);
    const tampered = jcs({ ...PARAMS, schema_version: 1, compression: { ...PARAMS.compression, target_ratio: 0.9 } });
    await t.database.db.updateTable('consolidation_policies').set({ params: tampered }).where('agent_id', '=', a.agentId).execute();
    const bad = await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN });
    expect(bad.body.mismatches).toEqual(expect.arrayContaining([expect.objectContaining({ projection: 'consolidation_policies', key: `${a.agentId}/1`, field: 'params', stored: tampered })]));
    await t.database.db.updateTable('consolidation_policies').set({ params: jcs(PARAMS) }).where('agent_id', '=', a.agentId).execute();
    expect((await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN })).body.ok).toBe(true);
    expect(r.body.policy.log_index).toEqual(expect.any(Number));
    const adoption = await t.request('GET', '/admin/trust/adoption', { headers: ADMIN });
    expect(adoption.body.declarations.consolidation_policies).toBeGreaterThanOrEqual(1);
  });
});

describe('custody restrictions', () => {
  test('403 CONSOLIDATION_POLICY_AMEND_FORBIDDEN and POLICY_BINDING_AMEND_FORBIDDEN while a recovery intent is open', async () => {
    const recoveryKey = generateKeyPairSync('ed25519');
    const recovery = {
      publicKeyPem: recoveryKey.publicKey.export({ format: 'pem', type: 'spki' }).toString(),
      privateKeyPem: recoveryKey.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    };
    const a = await t.registerAgent({ recovery_public_key: recovery.publicKeyPem });
    t.clock.advance(25 * 3_600_000); // past the 24-hour enrolment grace of the recovery key
    const intent = { agent_id: a.agentId, new_passport_public_key: generateKeyPairSync('ed25519').publicKey.export({ format: 'pem', type: 'spki' }).toString() };
    const c = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId, purpose: 'recovery' } })).body;
    const opened = await t.request('POST', '/v1/recovery/intent', {
      body: { ...intent, challenge_id: c.challenge_id, recovery_signature: signWithNode(recovery.privateKeyPem, schemeBytes('svc.recovery.intent.v1', a.agentId, c.challenge_id, c.challenge_nonce, intent)) },
    });
    expect(opened.status).toBe(201);
    const r = await amend(a, await signedBody(t, a, SCHEME, content()));
    expect([...codeOf(r), r.body.reason]).toEqual([403, 'CONSOLIDATION_POLICY_AMEND_FORBIDDEN', 'recovery_intent_open']);
    const b = await t.request('POST', '/v1/me/policy-bindings/amend', {
      token: a.apiKey, body: await signedBody(t, a, 'svc.policy_binding.amend.v1', { binding_type: 'tool_allow_list', params: { allowed_tools: [] } }),
    });
    expect([...codeOf(b), b.body.reason]).toEqual([403, 'POLICY_BINDING_AMEND_FORBIDDEN', 'recovery_intent_open']);
  });
});
