/**
 * Covenants over HTTP: the reads (root and public), amend with every template and every error code,
 * the passport signature high-authority agents need (made with node:crypto and with openssl; replays
 * refused), the 24-hour enrolment grace, the legacy enrolment and its cut-off by the injected clock,
 * security, the trust log entries and a clean parity check (and a tampered row found).
 */
import { createHash, createPublicKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase } from './helpers/engines';
import { startTestApp, type TestApp } from './helpers/harness';
import { admin, codeOf, DAY, HOUR, keyPair, logEntries, nodeSign, opensslKeyPair, signed, startOn } from './custody-support';

const AMEND = 'svc.covenant.amend.v1';
const UNKNOWN = '00000000-0000-4000-8000-000000000000';
let t: TestApp;

const amend = (a: { apiKey: string }, body: unknown) => t.request('POST', '/v1/me/covenant/amend', { token: a.apiKey, body });
const mine = async (a: { apiKey: string }) => (await t.request('GET', '/v1/me/covenant', { token: a.apiKey })).body;
const pub = async (id: string) => t.request('GET', `/v1/agents/${id}/covenant`);

async function withRecoveryKey() {
  const recovery = keyPair();
  const a = await t.registerAgent({ recovery_public_key: recovery.publicKeyPem });
  return { a, recovery };
}

/** An agent 31 days into its epoch: established, so high-authority. */
async function established(overrides: Record<string, unknown> = {}) {
  const a = await t.registerAgent(overrides);
  const start = t.clock.now();
  t.clock.advanceDays(31);
  return { a, restore: () => t.clock.set(start) };
}

beforeAll(async () => {
  t = await startTestApp({ env: { SVC_OUTBOUND_ALLOW_LOOPBACK: 'true' } });
});
afterAll(async () => {
  await t?.close();
});

describe('reads', () => {
  test('registration with a recovery key: the owner sees the key and its 24-hour grace, the public only its SHA-256; the log has covenant.bound', async () => {
    const { a, recovery } = await withRecoveryKey();
    const me = await mine(a);
    expect(me).toMatchObject({
      status: 'success', agent_id: a.agentId,
      covenant: {
        template_id: 'owner-recovery-key', tier: 'strong', activation: 'active',
        params: { recovery_key_sha256: a.body.recovery.recovery_key_sha256, veto_window_days: 7 },
        recovery_key: { public_key: recovery.publicKeyPem, sha256: a.body.recovery.recovery_key_sha256, usable: false, usable_from: new Date(t.clock.now() + DAY).toISOString() },
      },
    });
    const p = await pub(a.agentId);
    expect(p.status).toBe(200);
    expect(p.body.covenant.recovery_key).not.toHaveProperty('public_key');
    expect(p.raw).not.toContain('BEGIN PUBLIC KEY');
    expect(p.body.covenant.params).toEqual(me.covenant.params);
    const entries = await logEntries(t, a.agentId);
    const bound = entries.find((e) => e.kind === 'covenant.bound');
    expect(bound).toMatchObject({
      epoch: 1,
      data: {
        covenant_id: me.covenant.covenant_id, template_id: 'owner-recovery-key', bound_by: 'registration',
        recovery_key: { sha256: a.body.recovery.recovery_key_sha256 }, params: { recovery_key_sha256: a.body.recovery.recovery_key_sha256 },
      },
    });
    expect(me.covenant.bound_log_index).toBe(bound!.index);
    expect((await t.request('GET', '/v1/me', { token: a.apiKey })).body).toMatchObject({ recovery_enrolled: true, covenant_template_id: 'owner-recovery-key', staged_resurrection_until: null });
  });

  test('no covenant: null on both reads; an unknown or malformed agent id is 404 AGENT_NOT_FOUND', async () => {
    const a = await t.registerAgent();
    expect((await mine(a)).covenant).toBeNull();
    expect((await pub(a.agentId)).body.covenant).toBeNull();
    for (const id of [UNKNOWN, 'not-a-uuid']) expect(codeOf(await pub(id)), id).toEqual([404, 'AGENT_NOT_FOUND']);
  });

  test('security: /v1/me/covenant, amend and enrol need the root key (none 401; scoped key or session 403 ROOT_KEY_REQUIRED)', async () => {
    const a = await t.registerAgent();
    const scoped = (await t.request('POST', '/v1/me/keys', { token: a.apiKey, body: { scopes: ['svc:memory'] } })).body.api_key;
    const c = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
    const session = (await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: a.agentId, challenge_id: c.challenge_id, signature: nodeSign(a.privateKeyPem, c.sign_payload) } })).body.session_token;
    const calls: [string, string, unknown][] = [
      ['GET', '/v1/me/covenant', undefined],
      ['POST', '/v1/me/covenant/amend', { template_id: 'successor-later', params: { successor_agent_id: UNKNOWN } }],
      ['POST', '/v1/me/covenant/enrol', { recovery_public_key: keyPair().publicKeyPem }],
    ];
    for (const [method, path, body] of calls) {
      expect(codeOf(await t.request(method as any, path, { body })), `${path} no key`).toEqual([401, 'INVALID_API_KEY']);
      expect(codeOf(await t.request(method as any, path, { body, token: 'svc_wrong' })), `${path} wrong key`).toEqual([401, 'INVALID_API_KEY']);
      expect(codeOf(await t.request(method as any, path, { body, token: scoped })), `${path} scoped`).toEqual([403, 'ROOT_KEY_REQUIRED']);
      expect(codeOf(await t.request(method as any, path, { body, token: session })), `${path} session`).toEqual([403, 'ROOT_KEY_REQUIRED']);
    }
  });
});

describe('amend', () => {
  test('binds owner-recovery-key (covenant.bound), changes the key (covenant.amended, a new 24-hour grace), an identical amend changes nothing', async () => {
    const a = await t.registerAgent();
    const k1 = keyPair();
    const r = await amend(a, { template_id: 'owner-recovery-key', params: { recovery_public_key: k1.publicKeyPem } });
    expect(r.status).toBe(200);
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.body).toMatchObject({ status: 'success', changed: true, previous_template_id: null, signed: false, covenant: { template_id: 'owner-recovery-key', recovery_key: { public_key: k1.publicKeyPem, usable: false } } });
    t.clock.advance(DAY - 1);
    expect((await mine(a)).covenant.recovery_key.usable).toBe(false);
    t.clock.advance(1);
    expect((await mine(a)).covenant.recovery_key.usable).toBe(true);

    const same = await amend(a, { template_id: 'owner-recovery-key', params: { recovery_public_key: k1.publicKeyPem } });
    expect(same.body).toMatchObject({ changed: false, covenant: { covenant_id: r.body.covenant.covenant_id } });

    const k2 = keyPair();
    const changed = await amend(a, { template_id: 'owner-recovery-key', params: { recovery_public_key: k2.publicKeyPem } });
    expect(changed.body).toMatchObject({ changed: true, previous_template_id: 'owner-recovery-key', covenant: { recovery_key: { public_key: k2.publicKeyPem, usable: false } } });
    expect(changed.body.covenant.recovery_key.usable_from).toBe(new Date(t.clock.now() + DAY).toISOString());
    const entries = (await logEntries(t, a.agentId)).filter((e) => e.kind.startsWith('covenant.'));
    expect(entries.map((e) => e.kind)).toEqual(['covenant.bound', 'covenant.amended']);
    expect(entries[1].data).toMatchObject({ supersedes_covenant_id: r.body.covenant.covenant_id, covenant_id: changed.body.covenant.covenant_id, bound_by: 'amend', signed: false });
  });

  test('channel: the signing secret is shown once; the owner sees the URL, the public its host and SHA-256', async () => {
    const a = await t.registerAgent();
    const r = await amend(a, { template_id: 'channel', params: { url: 'https://localhost/recovery-hook' } });
    expect(r.status).toBe(200);
    expect(r.body.channel_signing_secret).toMatch(/^chsec_/);
    expect(r.body.covenant).toMatchObject({ template_id: 'channel', tier: 'weak', params: { url: 'https://localhost/recovery-hook', veto_window_days: 7 } });
    const me = await mine(a);
    expect(JSON.stringify(me)).not.toContain('chsec_');
    const p = (await pub(a.agentId)).body;
    expect(p.covenant.params).toEqual({ host: 'localhost', url_sha256: expect.stringMatching(/^[0-9a-f]{64}$/), veto_window_days: 7 });
    const entry = (await logEntries(t, a.agentId)).find((e) => e.kind === 'covenant.bound');
    expect(entry!.data.params).toEqual(p.covenant.params);
  });

  test('successor-later and quorum-later are stored and shown, with no activation', async () => {
    const a = await t.registerAgent();
    const [b, c] = [await t.registerAgent(), await t.registerAgent()];
    const s = await amend(a, { template_id: 'successor-later', params: { successor_agent_id: b.agentId.toUpperCase() } });
    expect(s.body.covenant).toMatchObject({ template_id: 'successor-later', activation: 'none', tier: 'strong', params: { successor_agent_id: b.agentId } });
    const q = await amend(a, { template_id: 'quorum-later', params: { members: [b.agentId, c.agentId], threshold: 2 } });
    expect(q.body.covenant).toMatchObject({ template_id: 'quorum-later', activation: 'none', params: { members: [b.agentId, c.agentId], threshold: 2 } });
    expect((await pub(a.agentId)).body.covenant.template_id).toBe('quorum-later');
  });

  test('422 COVENANT_TEMPLATE_INVALID: missing, unknown, not a string', async () => {
    const a = await t.registerAgent();
    for (const template_id of [undefined, 'owner-recovery', 'CHANNEL', 7, null]) {
      const r = await amend(a, { template_id, params: {} });
      expect(codeOf(r), JSON.stringify(template_id)).toEqual([422, 'COVENANT_TEMPLATE_INVALID']);
    }
  });

  test('422 COVENANT_PARAMS_INVALID for every template', async () => {
    const a = await t.registerAgent();
    const b = await t.registerAgent();
    const cases: [string, unknown][] = [
      ['owner-recovery-key', undefined],
      ['owner-recovery-key', []],
      ['owner-recovery-key', 'key'],
      ['owner-recovery-key', {}],
      ['owner-recovery-key', { recovery_public_key: 'not a key' }],
      ['owner-recovery-key', { recovery_public_key: keyPair().privateKeyPem }],
      ['owner-recovery-key', { recovery_public_key: keyPair().publicKeyPem, extra: 1 }],
      ['channel', { url: 'http://localhost/hook' }],
      ['channel', { url: 'https://user:pw@localhost/hook' }],
      ['channel', { url: 'not a url' }],
      ['channel', { url: 'https://10.0.0.7/hook' }],
      ['channel', { url: 'https://169.254.169.254/latest' }],
      ['channel', { url: `https://localhost/${'x'.repeat(2100)}` }],
      ['successor-later', { successor_agent_id: a.agentId }],
      ['successor-later', { successor_agent_id: UNKNOWN }],
      ['successor-later', { successor_agent_id: 'nope' }],
      ['quorum-later', { members: [b.agentId], threshold: 1 }],
      ['quorum-later', { members: [b.agentId, b.agentId], threshold: 2 }],
      ['quorum-later', { members: [b.agentId, a.agentId], threshold: 2 }],
      ['quorum-later', { members: [b.agentId, UNKNOWN], threshold: 2 }],
      ['quorum-later', { members: [b.agentId, (await t.registerAgent()).agentId], threshold: 3 }],
      ['quorum-later', { members: [b.agentId, (await t.registerAgent()).agentId], threshold: 1.5 }],
    ];
    for (const [template_id, params] of cases) {
      const r = await amend(a, { template_id, params });
      expect(codeOf(r), `${template_id} ${JSON.stringify(params)?.slice(0, 80)}`).toEqual([422, 'COVENANT_PARAMS_INVALID']);
    }
    expect((await mine(a)).covenant).toBeNull();
  });

  test('403 COVENANT_DOWNGRADE_FORBIDDEN from a strong template to the weak channel; weak to strong and strong to strong are allowed', async () => {
    const { a } = await withRecoveryKey();
    const down = await amend(a, { template_id: 'channel', params: { url: 'https://localhost/hook' } });
    expect(codeOf(down)).toEqual([403, 'COVENANT_DOWNGRADE_FORBIDDEN']);
    expect(down.body).toMatchObject({ current_template_id: 'owner-recovery-key', requested_template_id: 'channel' });
    const b = await t.registerAgent();
    expect((await amend(a, { template_id: 'successor-later', params: { successor_agent_id: b.agentId } })).status).toBe(200);
    expect(codeOf(await amend(a, { template_id: 'channel', params: { url: 'https://localhost/hook' } }))).toEqual([403, 'COVENANT_DOWNGRADE_FORBIDDEN']);

    const c = await t.registerAgent();
    expect((await amend(c, { template_id: 'channel', params: { url: 'https://localhost/hook' } })).status).toBe(200);
    expect((await amend(c, { template_id: 'channel', params: { url: 'https://localhost/other' } })).status).toBe(200);
    expect((await amend(c, { template_id: 'owner-recovery-key', params: { recovery_public_key: keyPair().publicKeyPem } })).body.previous_template_id).toBe('channel');
  });

  test('a high-authority (established) agent must sign: 422 PASSPORT_SIGNATURE_REQUIRED; node:crypto and openssl signatures accepted; replays refused', async () => {
    const ossl = opensslKeyPair();
    const { a, restore } = await established({ passport_public_key: ossl.publicKeyPem });
    try {
      const passport = { ...ossl, sign: ossl.sign };
      const k = keyPair();
      const body = { template_id: 'owner-recovery-key', params: { recovery_public_key: k.publicKeyPem } };
      const none = await amend(a, body);
      expect(codeOf(none)).toEqual([422, 'PASSPORT_SIGNATURE_REQUIRED']);
      expect(none.body).toMatchObject({ scheme: AMEND, missing: ['challenge_id', 'passport_signature'] });
      // A challenge without a signature is still missing one.
      const cOnly = await signed(t, a.agentId, AMEND, body, passport);
      expect(codeOf(await amend(a, { ...body, challenge_id: cOnly.challenge_id }))).toEqual([422, 'PASSPORT_SIGNATURE_REQUIRED']);

      // Signed by openssl: accepted.
      const s = await signed(t, a.agentId, AMEND, body, passport);
      const ok = await amend(a, { ...body, challenge_id: s.challenge_id, passport_signature: s.signature });
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ changed: true, signed: true });
      // The same challenge again: used.
      const k2 = { template_id: 'owner-recovery-key', params: { recovery_public_key: keyPair().publicKeyPem } };
      expect(codeOf(await amend(a, { ...k2, challenge_id: s.challenge_id, passport_signature: s.signature }))).toEqual([409, 'CHALLENGE_ALREADY_USED']);
      // The signature replayed on a fresh challenge, or over other content: invalid.
      const fresh = await signed(t, a.agentId, AMEND, k2, passport);
      const replay = await amend(a, { ...k2, challenge_id: fresh.challenge_id, passport_signature: s.signature });
      expect(codeOf(replay)).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
      expect(replay.body).toMatchObject({ scheme: AMEND, field: 'body.passport_signature' });
      const other = await signed(t, a.agentId, AMEND, body, passport); // signs the first params
      expect(codeOf(await amend(a, { ...k2, challenge_id: other.challenge_id, passport_signature: other.signature }))).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
      // Another key's signature, another scheme's bytes: invalid.
      const wrongKey = await signed(t, a.agentId, AMEND, k2, keyPair());
      expect(codeOf(await amend(a, { ...k2, challenge_id: wrongKey.challenge_id, passport_signature: wrongKey.signature }))).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
      const wrongScheme = await signed(t, a.agentId, 'svc.consolidation.amend.v1', k2, passport);
      expect(codeOf(await amend(a, { ...k2, challenge_id: wrongScheme.challenge_id, passport_signature: wrongScheme.signature }))).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
      // Another agent's challenge: not this agent's.
      const b = await t.registerAgent();
      const foreign = await signed(t, b.agentId, AMEND, k2, passport);
      expect(codeOf(await amend(a, { ...k2, challenge_id: foreign.challenge_id, passport_signature: foreign.signature }))).toEqual([404, 'CHALLENGE_NOT_FOUND']);
      // An expired challenge.
      const late = await signed(t, a.agentId, AMEND, k2, passport);
      t.clock.advanceSeconds(t.config.core.challengeTtlSeconds + 1);
      expect(codeOf(await amend(a, { ...k2, challenge_id: late.challenge_id, passport_signature: late.signature }))).toEqual([401, 'CHALLENGE_EXPIRED']);
      // Signed with node:crypto over the documented bytes: accepted.
      const nodeSigned = await signed(t, a.agentId, AMEND, k2, { publicKeyPem: ossl.publicKeyPem, privateKeyPem: ossl.privateKeyPem });
      expect((await amend(a, { ...k2, challenge_id: nodeSigned.challenge_id, passport_signature: nodeSigned.signature })).body).toMatchObject({ changed: true, signed: true });
      const amended = (await logEntries(t, a.agentId)).filter((e) => e.kind === 'covenant.amended');
      expect(amended.at(-1)!.data.signed).toBe(true);
    } finally {
      restore();
      ossl.close();
    }
  });

  test('a low-authority agent may sign: a given signature is verified (401 when wrong); without one it is not needed', async () => {
    const a = await t.registerAgent();
    const body = { template_id: 'owner-recovery-key', params: { recovery_public_key: keyPair().publicKeyPem } };
    const bad = await signed(t, a.agentId, AMEND, body, keyPair());
    expect(codeOf(await amend(a, { ...body, challenge_id: bad.challenge_id, passport_signature: bad.signature }))).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    expect((await mine(a)).covenant).toBeNull();
    const good = await signed(t, a.agentId, AMEND, body, a);
    expect((await amend(a, { ...body, challenge_id: good.challenge_id, passport_signature: good.signature })).body).toMatchObject({ changed: true, signed: true });
  });

  test('403 COVENANT_AMEND_FORBIDDEN while a recovery intent is open; allowed again once it is vetoed', async () => {
    const { a, recovery } = await withRecoveryKey();
    t.clock.advance(DAY + HOUR);
    const newKey = keyPair();
    const content = { agent_id: a.agentId, new_passport_public_key: newKey.publicKeyPem };
    const s = await signed(t, a.agentId, 'svc.recovery.intent.v1', content, recovery, 'recovery');
    const opened = await t.request('POST', '/v1/recovery/intent', { body: { ...content, challenge_id: s.challenge_id, recovery_signature: s.signature } });
    expect(opened.status).toBe(201);
    const body = { template_id: 'owner-recovery-key', params: { recovery_public_key: keyPair().publicKeyPem } };
    const r = await amend(a, body);
    expect(codeOf(r)).toEqual([403, 'COVENANT_AMEND_FORBIDDEN']);
    expect(r.body.reason).toBe('recovery_intent_open');
    const v = await signed(t, a.agentId, 'svc.recovery.veto.v1', { intent_id: opened.body.intent.intent_id }, a);
    expect((await t.request('POST', '/v1/me/recovery/veto', { token: a.apiKey, body: { intent_id: opened.body.intent.intent_id, challenge_id: v.challenge_id, passport_signature: v.signature } })).status).toBe(200);
    expect((await amend(a, body)).status).toBe(200);
  });
});

describe('legacy enrolment', () => {
  const cutOff = Date.parse('2026-11-15T00:00:00Z');

  test('open before 2026-11-15T00:00:00Z by the injected clock: 201 and covenant.bound (legacy_enrol); a second time 409 COVENANT_ALREADY_ENROLLED', async () => {
    const before = t.clock.now();
    t.clock.set(cutOff - DAY);
    try {
      const a = await t.registerAgent();
      const k = keyPair();
      const r = await t.request('POST', '/v1/me/covenant/enrol', { token: a.apiKey, body: { recovery_public_key: k.publicKeyPem } });
      expect(r.status).toBe(201);
      expect(r.body.covenant).toMatchObject({ template_id: 'owner-recovery-key', recovery_key: { public_key: k.publicKeyPem, usable: false } });
      expect((await logEntries(t, a.agentId)).find((e) => e.kind === 'covenant.bound')!.data.bound_by).toBe('legacy_enrol');
      const again = await t.request('POST', '/v1/me/covenant/enrol', { token: a.apiKey, body: { recovery_public_key: keyPair().publicKeyPem } });
      expect(codeOf(again)).toEqual([409, 'COVENANT_ALREADY_ENROLLED']);
      const { a: withKey } = await withRecoveryKey();
      expect(codeOf(await t.request('POST', '/v1/me/covenant/enrol', { token: withKey.apiKey, body: { recovery_public_key: k.publicKeyPem } }))).toEqual([409, 'COVENANT_ALREADY_ENROLLED']);
      for (const recovery_public_key of [undefined, 'not a key', 42, keyPair().privateKeyPem]) {
        const bad = await t.request('POST', '/v1/me/covenant/enrol', { token: (await t.registerAgent()).apiKey, body: { recovery_public_key } });
        expect(codeOf(bad), String(recovery_public_key).slice(0, 20)).toEqual([422, 'COVENANT_PARAMS_INVALID']);
      }
      t.clock.set(cutOff - 1);
      expect((await t.request('POST', '/v1/me/covenant/enrol', { token: (await t.registerAgent()).apiKey, body: { recovery_public_key: keyPair().publicKeyPem } })).status).toBe(201);
    } finally {
      t.clock.set(before);
    }
  });

  test('410 LEGACY_COVENANT_ENROL_CLOSED from the cut-off on (checked first)', async () => {
    const before = t.clock.now();
    try {
      for (const at of [cutOff, cutOff + 1, before]) {
        t.clock.set(at);
        const a = await t.registerAgent();
        const r = await t.request('POST', '/v1/me/covenant/enrol', { token: a.apiKey, body: { recovery_public_key: keyPair().publicKeyPem } });
        expect(codeOf(r), new Date(at).toISOString()).toEqual([410, 'LEGACY_COVENANT_ENROL_CLOSED']);
        expect(r.body.closed_at).toBe('2026-11-15T00:00:00.000Z');
        expect((await mine(a)).covenant).toBeNull();
      }
      const { a } = await withRecoveryKey();
      expect(codeOf(await t.request('POST', '/v1/me/covenant/enrol', { token: a.apiKey, body: { recovery_public_key: 'x' } }))).toEqual([410, 'LEGACY_COVENANT_ENROL_CLOSED']);
    } finally {
      t.clock.set(before);
    }
  });
});

describe('parity', () => {
  test('the covenants and recovery keys replay from the log clean; a row changed behind the service\'s back is reported', async () => {
    const clean = await t.request('GET', '/admin/trust/parity-check', { headers: admin });
    expect(clean.body.mismatches).toEqual([]);
    expect(clean.body.ok).toBe(true);
    const { a } = await withRecoveryKey();
    await t.database.db.updateTable('covenants').set({ params: JSON.stringify({ recovery_key_sha256: 'f'.repeat(64), veto_window_days: 7 }) }).where('agent_id', '=', a.agentId).execute();
    await t.database.db.updateTable('recovery_keys').set({ enrolled_at: 1 }).where('agent_id', '=', a.agentId).execute();
    const dirty = (await t.request('GET', '/admin/trust/parity-check', { headers: admin })).body;
    expect(dirty.ok).toBe(false);
    expect(dirty.mismatches).toEqual(expect.arrayContaining([
      expect.objectContaining({ projection: 'covenants', field: 'params' }),
      expect.objectContaining({ projection: 'recovery_keys', key: a.agentId, field: 'enrolled_at' }),
    ]));
  });
});

describe('covenants older than the trust log', () => {
  test('get their covenant.bound entry at start-up, once; the parity check is clean', async () => {
    const db = await createTestDatabase();
    try {
      const first = await startOn(db, {});
      const key = keyPair();
      const agentId = '6ba7b810-9dad-41d1-80b4-00c04fd430c8';
      const at = first.clock.now() - 10 * DAY;
      // As registration wrote them before the log: the covenant and recovery key rows, no entry.
      await first.database.db.insertInto('agents').values({
        agent_id: agentId, agent_name: 'pre-log', owner_identifier: 'pre-log-owner', tier: 'free', status: 'active', frozen: 0, referral_agent: null,
        registration_source: null, agent_card_url: null, affiliation: null, created_at: at, updated_at: at,
      } as any).execute();
      await first.database.db.insertInto('passports').values({
        agent_id: agentId, public_key_pem: keyPair().publicKeyPem, derivation_method: 'operator_derived', key_algorithm: 'ed25519', created_at: at, revoked_at: null,
        bio: null, skills: '[]', listed: 0, sub_signal_visibility: 'decomposed', self_reported_capabilities: null,
      } as any).execute();
      await first.database.db.insertInto('recovery_keys').values({ agent_id: agentId, public_key_pem: key.publicKeyPem, enrolled_at: at }).execute();
      const sha = createHash('sha256').update(createPublicKey(key.publicKeyPem).export({ format: 'der', type: 'spki' })).digest('hex');
      await first.database.db.insertInto('covenants').values({
        covenant_id: '6ba7b810-9dad-41d1-80b4-00c04fd430c9', agent_id: agentId, template_id: 'owner-recovery-key',
        params: JSON.stringify({ recovery_key_sha256: sha, veto_window_days: 7 }), bound_at: at, superseded_at: null,
      }).execute();
      await first.database.db.insertInto('agent_epochs').values({ agent_id: agentId, epoch: 1, opened_at: at, opened_by: 'registration', closed_at: null, open_log_index: null }).execute();
      await first.close();

      for (let i = 0; i < 2; i++) {
        const again = await startOn(db, {});
        try {
          const entries = await logEntries(again, agentId);
          expect(entries.map((e) => e.kind)).toEqual(['epoch.opened', 'covenant.bound']);
          expect(entries[1]).toMatchObject({ at: new Date(at).toISOString(), data: { bound_by: 'registration', recovery_key: { sha256: sha, enrolled_at: new Date(at).toISOString() } } });
          const r = (await again.request('GET', `/v1/agents/${agentId}/covenant`)).body.covenant;
          expect(r).toMatchObject({ template_id: 'owner-recovery-key', bound_log_index: entries[1].index, recovery_key: { usable: true } });
          expect((await again.request('GET', '/admin/trust/parity-check', { headers: admin })).body.mismatches).toEqual([]);
        } finally {
          await again.close();
        }
      }
    } finally {
      await db.close();
    }
  }, 180_000);
});
