/**
 * Recovery through a channel covenant (the weak tier) and the staged resurrection after it.
 *
 * The code is delivered for real: svc runs as a process (trusting the test's self-signed receiver
 * through NODE_EXTRA_CA_CERTS, loopback allowed), POSTs the code to the loopback HTTPS receiver, which
 * checks the HMAC signature with the secret the covenant returned. The same database is then opened
 * by an in-process svc with the injected clock past the 7-day veto window, which initiates and
 * completes the recovery (signed by the new passport key) and walks the 14-day staged resurrection:
 * paid charges, commons writes, custody transfer and covenant changes refused, everything else works.
 * The in-process svc does not trust the receiver: its delivery fails (502) and opens nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createHash } from 'node:crypto';
import { signatureProblem, startHttpsReceiver, type HttpsReceiver } from './fakes/https-receiver';
import { createTestDatabase, type TestDatabase } from './helpers/engines';
import { startTestApp, type TestApp } from './helpers/harness';
import { exitOf, startServerProcess } from './helpers/process';
import { eventually } from './blobs-support';
import { admin, codeOf, DAY, jcs, keyPair, logEntries, nodeSign, signedBytes, startOn } from './custody-support';

let db: TestDatabase;
let receiver: HttpsReceiver;
let env: Record<string, string>;

beforeAll(async () => {
  db = await createTestDatabase();
  receiver = await startHttpsReceiver();
  env = { ...db.env, SVC_EMBEDDINGS: 'none', SVC_OUTBOUND_ALLOW_LOOPBACK: 'true', SVC_OUTBOUND_ALLOWED_PORTS: String(receiver.port) };
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await db?.close();
});

async function call(url: string, method: string, path: string, token?: string, body?: object) {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  if (body) headers['content-type'] = 'application/json';
  const res = await fetch(`${url}${path}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  let json: any = text;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body: json };
}

describe('channel recovery and staged resurrection', () => {
  test('the code reaches the channel signed; the intent opens with it; after the window the new passport key initiates and completes; 14 days of staged resurrection', async () => {
    const newKey = keyPair();
    let agentId = '';
    let oldKey = '';
    let intentId = '';
    let secret = '';

    // ---- a real process delivers the code ----
    // A process start-up (tsx compiling svc) takes tens of seconds on a busy machine.
    const p = await startServerProcess({ ...env, NODE_EXTRA_CA_CERTS: receiver.certPath }, { startTimeoutMs: 120_000 });
    try {
      const reg = await call(p.url, 'POST', '/v1/register', undefined, { agent_name: 'channel-agent', owner_identifier: 'channel-owner', agree_to_terms: true });
      expect(reg.status).toBe(201);
      agentId = reg.body.agent_id;
      oldKey = reg.body.api_key;
      const bound = await call(p.url, 'POST', '/v1/me/covenant/amend', oldKey, { template_id: 'channel', params: { url: `${receiver.url}/recovery` } });
      expect(bound.status).toBe(200);
      secret = bound.body.channel_signing_secret;
      expect(secret).toMatch(/^chsec_/);

      const request = { agent_id: agentId, new_passport_public_key: newKey.publicKeyPem };
      const sent = await call(p.url, 'POST', '/v1/recovery/intent', undefined, request);
      expect(sent.status).toBe(202);
      expect(sent.body).toMatchObject({ status: 'channel_code_sent', agent_id: agentId });
      const delivered = await eventually(async () => receiver.calls.find((c) => c.path === '/recovery'), 10_000, 'channel delivery');
      expect(signatureProblem(secret, delivered, Math.floor(Date.now() / 1000))).toBeUndefined();
      expect(signatureProblem('chsec_wrong', delivered, Math.floor(Date.now() / 1000))).toBe('mismatch');
      const msg = JSON.parse(delivered.body);
      const contentSha = createHash('sha256').update(jcs(request)).digest('hex');
      expect(msg).toMatchObject({ event: 'recovery.channel_code', agent_id: agentId, content_sha256: contentSha, code: expect.stringMatching(/^rcc_/) });
      expect(sent.body.content_sha256).toBe(contentSha);

      // The code is bound to this request: another new key with it is refused.
      const other = await call(p.url, 'POST', '/v1/recovery/intent', undefined, { ...request, new_passport_public_key: keyPair().publicKeyPem, channel_code: msg.code });
      expect(codeOf(other)).toEqual([401, 'RECOVERY_CHANNEL_CODE_INVALID']);
      const opened = await call(p.url, 'POST', '/v1/recovery/intent', undefined, { ...request, channel_code: msg.code });
      expect(opened.status).toBe(201);
      expect(opened.body.intent).toMatchObject({ tier: 'channel', state: 'open', new_passport_public_key: newKey.publicKeyPem });
      intentId = opened.body.intent.intent_id;
    } finally {
      p.child.kill('SIGTERM');
      await exitOf(p.child);
    }

    // ---- the same database, in process, 8 days later ----
    const t: TestApp = await startOn(db, { SVC_OUTBOUND_ALLOW_LOOPBACK: 'true', SVC_OUTBOUND_ALLOWED_PORTS: String(receiver.port) });
    try {
      t.clock.set(Date.now() + 8 * DAY);
      // Initiate and complete are signed by the new passport key the intent names (not the old passport).
      const c0 = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: agentId, purpose: 'recovery' } })).body;
      const wrong = await t.request('POST', '/v1/recovery/initiate', {
        body: { agent_id: agentId, challenge_id: c0.challenge_id, passport_signature: nodeSign(keyPair().privateKeyPem, signedBytes('svc.recovery.initiate.v1', agentId, c0.challenge_id, c0.challenge_nonce, { agent_id: agentId })) },
      });
      expect(codeOf(wrong)).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
      const c1 = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: agentId, purpose: 'recovery' } })).body;
      const init = await t.request('POST', '/v1/recovery/initiate', {
        body: { agent_id: agentId, challenge_id: c1.challenge_id, passport_signature: nodeSign(newKey.privateKeyPem, signedBytes('svc.recovery.initiate.v1', agentId, c1.challenge_id, c1.challenge_nonce, { agent_id: agentId })) },
      });
      expect(init.status).toBe(200);
      expect(Object.keys(init.body.completion.signatures)).toEqual(['passport_signature']);
      const comp = init.body.completion;
      const done = await t.request('POST', '/v1/recovery/complete', { body: { intent_id: intentId, challenge_id: comp.challenge_id, passport_signature: nodeSign(newKey.privateKeyPem, comp.sign_payload) } });
      expect(done.status).toBe(200);
      const completedAt = t.clock.now();
      const until = new Date(completedAt + 14 * DAY).toISOString();
      expect(done.body).toMatchObject({ epoch: { closed: 1, opened: 2 }, staged_resurrection_until: until });
      const root = done.body.api_key as string;
      expect(codeOf(await t.request('GET', '/v1/me', { token: oldKey }))).toEqual([401, 'INVALID_API_KEY']);
      expect((await t.request('GET', '/v1/me', { token: root })).body.staged_resurrection_until).toBe(until);
      expect((await t.request('GET', `/v1/agents/${agentId}/passport`)).body.passport.staged_resurrection_until).toBe(until);

      // ---- restricted: paid charges, commons writes, custody transfer, covenant changes ----
      await t.database.db.insertInto('metering_free_slots')
        .values(Array.from({ length: 1000 }, (_, slot) => ({ agent_id: agentId, pool: 'memory_write', slot, used_at: t.clock.now() - 1000, charge_id: null })))
        .execute();
      expect((await t.request('POST', '/admin/billing/grants', { headers: admin, body: { agent_id: agentId, credits: 500, reference: 'staged-test' } })).status).toBe(200);
      const paid = await t.request('PUT', '/v1/memory/after-recovery', { token: root, body: { value: { note: 'paid write' } } });
      expect(codeOf(paid)).toEqual([403, 'STAGED_RESURRECTION_RESTRICTED']);
      expect(paid.body).toMatchObject({ staged_resurrection_until: until, restricted: 'credit_spend' });
      expect(codeOf(await t.request('GET', '/v1/memory/after-recovery', { token: root }))).toEqual([404, 'MEMORY_KEY_NOT_FOUND']);
      const balance = (await t.request('GET', '/v1/billing', { token: root })).body.credits_remaining_usd;
      expect(balance).toBe('5.0000');

      for (const [method, path, body] of [
        ['POST', '/v1/commons/entries', { key: 'k', value: 'v' }],
        ['POST', '/v1/commons/entries/00000000-0000-4000-8000-000000000000/vouch', undefined],
        ['DELETE', '/v1/commons/entries/00000000-0000-4000-8000-000000000000', undefined],
      ] as const) {
        const r = await t.request(method, path, { token: root, ...(body ? { body } : {}) });
        expect(codeOf(r), `${method} ${path}`).toEqual([403, 'STAGED_RESURRECTION_RESTRICTED']);
        expect(r.body.restricted).toBe('commons_write');
      }
      const stake = await t.request('POST', '/v1/agents/passport/stake', { token: root, body: { tier: 'low' } });
      expect(codeOf(stake)).toEqual([403, 'STAGED_RESURRECTION_RESTRICTED']);
      expect(stake.body.restricted).toBe('stake');
      const transfer = await t.request('POST', '/v1/me/custody/transfer/intent', { token: root, body: { incoming_public_key: keyPair().publicKeyPem, incoming_owner_identifier: 'buyer' } });
      expect(codeOf(transfer)).toEqual([403, 'STAGED_RESURRECTION_RESTRICTED']);
      expect(transfer.body.restricted).toBe('custody_transfer');
      const amend = await t.request('POST', '/v1/me/covenant/amend', { token: root, body: { template_id: 'owner-recovery-key', params: { recovery_public_key: keyPair().publicKeyPem } } });
      expect(codeOf(amend)).toEqual([403, 'COVENANT_AMEND_FORBIDDEN']);
      expect(amend.body.reason).toBe('staged_resurrection');
      // Everything else works: reads, free calls, the commons read, the passport session exchange.
      expect((await t.request('GET', '/v1/commons/entries', { token: root })).status).toBe(200);
      expect((await t.request('GET', '/v1/memory', { token: root })).status).toBe(200);
      const c2 = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: agentId } })).body;
      expect((await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: agentId, challenge_id: c2.challenge_id, signature: nodeSign(newKey.privateKeyPem, c2.sign_payload) } })).status).toBe(200);
      await t.database.db.deleteFrom('metering_free_slots').where('agent_id', '=', agentId).where('slot', '=', 999).execute();
      expect((await t.request('PUT', '/v1/memory/free-write', { token: root, body: { value: 1 } })).status).toBe(200);

      const trace = (await t.request('GET', `/admin/trust/decision-trace/${agentId}`, { headers: admin })).body;
      expect(trace.facts.staged_resurrection.value).toMatchObject({ until, intent_id: intentId });
      expect((await t.request('GET', '/admin/trust/adoption', { headers: admin })).body.custody.staged_resurrections_active).toBe(1);
      expect(trace.facts.staged_resurrection.log_indexes).toHaveLength(1);

      // ---- 14 days later: restrictions lifted ----
      t.clock.set(completedAt + 14 * DAY - 1);
      expect(codeOf(await t.request('PUT', '/v1/memory/after-recovery', { token: root, body: { value: 2 } }))).toEqual([403, 'STAGED_RESURRECTION_RESTRICTED']);
      t.clock.advance(1);
      const later = await t.request('PUT', '/v1/memory/after-recovery', { token: root, body: { value: { note: 'paid write' } } });
      expect(later.status).toBe(200);
      expect((await t.request('GET', '/v1/me', { token: root })).body.staged_resurrection_until).toBeNull();
      expect((await t.request('POST', '/v1/me/custody/transfer/intent', { token: root, body: { incoming_public_key: keyPair().publicKeyPem, incoming_owner_identifier: 'buyer' } })).status).toBe(201);

      const kinds = (await logEntries(t, agentId)).map((e) => e.kind);
      expect(kinds).toEqual(['epoch.opened', 'covenant.bound', 'recovery.intent.opened', 'recovery.initiated', 'epoch.closed', 'epoch.opened', 'recovery.completed']);
      expect((await t.request('GET', '/admin/trust/parity-check', { headers: admin })).body.mismatches).toEqual([]);
    } finally {
      await t.close();
    }
  }, 300_000);
});

describe('channel refusals (in process)', () => {
  test('502 RECOVERY_CHANNEL_DELIVERY_FAILED when the channel cannot be reached (nothing opens), 429 past the hourly codes, 401 RECOVERY_CHANNEL_CODE_INVALID for a code not delivered', async () => {
    const t = await startTestApp({ env: { SVC_OUTBOUND_ALLOW_LOOPBACK: 'true', SVC_OUTBOUND_ALLOWED_PORTS: String(receiver.port), SVC_RECOVERY_CHANNEL_CODES_PER_HOUR: '2' } });
    try {
      const a = await t.registerAgent();
      expect((await t.request('POST', '/v1/me/covenant/amend', { token: a.apiKey, body: { template_id: 'channel', params: { url: `${receiver.url}/untrusted` } } })).status).toBe(200);
      const request = { agent_id: a.agentId, new_passport_public_key: keyPair().publicKeyPem };
      const before = receiver.calls.length;
      for (let i = 0; i < 2; i++) {
        const r = await t.request('POST', '/v1/recovery/intent', { body: request });
        expect(codeOf(r)).toEqual([502, 'RECOVERY_CHANNEL_DELIVERY_FAILED']);
        expect(r.body.message).toMatch(/tls|certificate/i);
      }
      expect(receiver.calls.length).toBe(before); // the TLS handshake never completed
      const limited = await t.request('POST', '/v1/recovery/intent', { body: request });
      expect(codeOf(limited)).toEqual([429, 'RECOVERY_RATE_LIMITED']);
      expect(limited.headers['retry-after']).toBeDefined();
      const guessed = await t.request('POST', '/v1/recovery/intent', { body: { ...request, channel_code: 'rcc_guess' } });
      expect(codeOf(guessed)).toEqual([401, 'RECOVERY_CHANNEL_CODE_INVALID']);
      expect((await t.request('GET', `/v1/agents/${a.agentId}/recovery/intents`)).body.total).toBe(0);
      // A code is single use and expires after 15 minutes (a delivered code, stored as svc stores it).
      const code = 'rcc_known-code';
      const binding = createHash('sha256').update(jcs(request)).digest('hex');
      const row = (id: string, at: number) => ({ code_id: id, agent_id: a.agentId, binding_sha256: binding, code_sha256: createHash('sha256').update(code).digest('hex'), created_at: at, expires_at: at + 15 * 60_000, used_at: null });
      await t.database.db.insertInto('recovery_channel_codes').values(row('00000000-0000-4000-8000-0000000000c1', t.clock.now() - 16 * 60_000)).execute();
      expect(codeOf(await t.request('POST', '/v1/recovery/intent', { body: { ...request, channel_code: code } }))).toEqual([401, 'RECOVERY_CHANNEL_CODE_INVALID']);
      await t.database.db.insertInto('recovery_channel_codes').values(row('00000000-0000-4000-8000-0000000000c2', t.clock.now())).execute();
      const opened = await t.request('POST', '/v1/recovery/intent', { body: { ...request, channel_code: code } });
      expect(opened.status).toBe(201);
      const s = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
      const vetoBytes = signedBytes('svc.recovery.veto.v1', a.agentId, s.challenge_id, s.challenge_nonce, { intent_id: opened.body.intent.intent_id });
      expect((await t.request('POST', '/v1/me/recovery/veto', { token: a.apiKey, body: { intent_id: opened.body.intent.intent_id, challenge_id: s.challenge_id, passport_signature: nodeSign(a.privateKeyPem, vetoBytes) } })).status).toBe(200);
      expect(codeOf(await t.request('POST', '/v1/recovery/intent', { body: { ...request, channel_code: code } }))).toEqual([401, 'RECOVERY_CHANNEL_CODE_INVALID']);
    } finally {
      await t.close();
    }
  }, 120_000);
});
