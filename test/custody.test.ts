/**
 * Custody transfer over HTTP: the intent returns a challenge and the canonical custody-transfer bytes,
 * the completion (the current passport's signature, made with openssl and with node:crypto) closes the
 * custody epoch and opens the next for the incoming custodian — new root key once, old keys refused,
 * owner and passport key changed, current reputation fresh while the prior epoch stays readable, the
 * outgoing custodian's covenant ended — every error code, security, the log and parity.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';
import { admin, codeOf, DAY, keyPair, logEntries, nodeSign, opensslKeyPair, signed, signedBytes, type KeyPair } from './custody-support';

const TRANSFER = 'svc.custody.transfer.v1';
const UNKNOWN = '00000000-0000-4000-8000-000000000000';
let t: TestApp;

const intent = (a: { apiKey: string }, body: unknown) => t.request('POST', '/v1/me/custody/transfer/intent', { token: a.apiKey, body });
const completeT = (a: { apiKey: string }, body: unknown) => t.request('POST', '/v1/me/custody/transfer/complete', { token: a.apiKey, body });

async function rate(subject: string, n: number) {
  for (let i = 0; i < n; i++) {
    const rater = await t.registerAgent();
    const r = await t.request('POST', '/v1/feedback/interaction', {
      token: rater.apiKey, body: { subject_agent_id: subject, ref_type: 'task', ref_id: `task-${i}`, outcome: 'approved', category: 'task_completion' },
    });
    expect(r.status).toBe(201);
  }
}

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('custody transfer', () => {
  test('intent and complete (openssl passport key): a new epoch for the incoming custodian; old keys refused; reputation fresh, epoch 1 readable; covenant ended; the log proves it', async () => {
    const ossl = opensslKeyPair();
    try {
      const recovery = keyPair();
      const a = await t.registerAgent({ passport_public_key: ossl.publicKeyPem, recovery_public_key: recovery.publicKeyPem });
      await rate(a.agentId, 3);
      const scoped = (await t.request('POST', '/v1/me/keys', { token: a.apiKey, body: { scopes: ['svc:memory'] } })).body.api_key;
      const incoming = opensslKeyPair();
      const body = { incoming_public_key: incoming.publicKeyPem, incoming_owner_identifier: 'incoming-custodian@example.test' };
      const i = await intent(a, body);
      expect(i.status).toBe(201);
      expect(i.body).toMatchObject({
        status: 'success', agent_id: a.agentId, epoch: 1, scheme: TRANSFER, sign_payload_encoding: 'utf-8',
        content: { incoming_owner_identifier: 'incoming-custodian@example.test', incoming_public_key: incoming.publicKeyPem },
      });
      expect(i.body.sign_payload).toBe(signedBytes(TRANSFER, a.agentId, i.body.challenge_id, i.body.challenge_nonce, i.body.content));

      const done = await completeT(a, { transfer_id: i.body.transfer_id, passport_signature: ossl.sign(i.body.sign_payload) });
      expect(done.status).toBe(200);
      expect(done.headers['cache-control']).toBe('no-store');
      expect(done.body).toMatchObject({
        status: 'success', agent_id: a.agentId, epoch: { closed: 1, opened: 2 }, owner_identifier: 'incoming-custodian@example.test',
        passport: { public_key: incoming.publicKeyPem }, scoped_keys_revoked: 1, covenant_superseded: expect.any(String),
      });
      const root = done.body.api_key as string;
      for (const token of [a.apiKey, scoped]) expect(codeOf(await t.request('GET', '/v1/me', { token }))).toEqual([401, 'INVALID_API_KEY']);
      expect((await t.request('GET', '/v1/me', { token: root })).body).toMatchObject({ owner_identifier: 'incoming-custodian@example.test', recovery_enrolled: false, covenant_template_id: null });
      expect((await t.request('GET', `/v1/agents/${a.agentId}/covenant`)).body.covenant).toBeNull();
      expect((await t.request('GET', `/v1/agents/${a.agentId}/passport`)).body.passport.public_key).toBe(incoming.publicKeyPem);
      // The incoming custodian's key signs in; the outgoing one no longer does.
      const c = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
      expect((await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: a.agentId, challenge_id: c.challenge_id, signature: ossl.sign(c.sign_payload) } })).status).toBe(401);
      const c2 = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
      expect((await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: a.agentId, challenge_id: c2.challenge_id, signature: incoming.sign(c2.sign_payload) } })).status).toBe(200);

      const now = (await t.request('GET', `/v1/agents/${a.agentId}/reputation/history`)).body;
      expect(now).toMatchObject({ epoch: 2, current_epoch: 2, reputation: { event_count: 0 } });
      const before = (await t.request('GET', `/v1/agents/${a.agentId}/reputation/history?epoch=1&include_events=true`)).body;
      expect(before).toMatchObject({ epoch: 1, reputation: { event_count: 3 } });
      expect(before.events).toHaveLength(3);
      // The old owner's recovery key no longer recovers the agent.
      t.clock.advance(DAY);
      const r = await t.request('POST', '/v1/recovery/intent', { body: { agent_id: a.agentId, new_passport_public_key: keyPair().publicKeyPem } });
      expect(codeOf(r)).toEqual([409, 'RECOVERY_COVENANT_REQUIRED']);

      const entries = await logEntries(t, a.agentId);
      const tail = entries.slice(-5).map((e) => [e.kind, e.epoch]);
      expect(tail).toEqual([['key.created', 1], ['key.revoked', 1], ['epoch.closed', 1], ['epoch.opened', 2], ['custody.transferred', 2]]);
      const transferred = entries.at(-1)!;
      expect(transferred.data).toMatchObject({ transfer_id: i.body.transfer_id, closed_epoch: 1, opened_epoch: 2, superseded_covenant_id: done.body.covenant_superseded, scoped_keys_revoked: 1 });
      expect(JSON.stringify(transferred)).not.toContain('incoming-custodian@example.test');
      expect((await t.request('GET', '/admin/trust/parity-check', { headers: admin })).body.mismatches).toEqual([]);
      incoming.close();
    } finally {
      ossl.close();
    }
  });

  test('the transfer bytes signed with node:crypto; a new intent replaces the pending one (404 CUSTODY_TRANSFER_NOT_FOUND for the first)', async () => {
    const a = await t.registerAgent();
    const first = await intent(a, { incoming_public_key: keyPair().publicKeyPem, incoming_owner_identifier: 'owner-one' });
    const incoming = keyPair();
    const second = await intent(a, { incoming_public_key: incoming.publicKeyPem, incoming_owner_identifier: 'owner-two' });
    expect(codeOf(await completeT(a, { transfer_id: first.body.transfer_id, passport_signature: nodeSign(a.privateKeyPem, first.body.sign_payload) }))).toEqual([404, 'CUSTODY_TRANSFER_NOT_FOUND']);
    const ok = await completeT(a, { transfer_id: second.body.transfer_id, passport_signature: nodeSign(a.privateKeyPem, second.body.sign_payload) });
    expect(ok.status).toBe(200);
    expect(codeOf(await completeT({ apiKey: ok.body.api_key }, { transfer_id: second.body.transfer_id, passport_signature: nodeSign(incoming.privateKeyPem, second.body.sign_payload) }))).toEqual([404, 'CUSTODY_TRANSFER_NOT_FOUND']);
  });

  test('intent: 422 INVALID_PASSPORT_PUBLIC_KEY, 422 INVALID_OWNER_IDENTIFIER, 409 CUSTODY_TRANSFER_CONFLICT, 403 PASSPORT_REVOKED, 409 RECOVERY_INTENT_ALREADY_OPEN', async () => {
    const a = await t.registerAgent();
    for (const incoming_public_key of [undefined, 'nope', keyPair().privateKeyPem, 7]) {
      expect(codeOf(await intent(a, { incoming_public_key, incoming_owner_identifier: 'x' })), String(incoming_public_key).slice(0, 20)).toEqual([422, 'INVALID_PASSPORT_PUBLIC_KEY']);
    }
    for (const incoming_owner_identifier of [undefined, '', '   ', '\u0085', 'o'.repeat(257), 5]) {
      expect(codeOf(await intent(a, { incoming_public_key: keyPair().publicKeyPem, incoming_owner_identifier })), JSON.stringify(incoming_owner_identifier)?.slice(0, 20)).toEqual([422, 'INVALID_OWNER_IDENTIFIER']);
    }
    // The incoming owner already has an agent of this name.
    const name = a.body.agent_name as string;
    await t.request('POST', '/v1/register', { body: { agent_name: name, owner_identifier: 'taken-owner', agree_to_terms: true } });
    const conflict = await intent(a, { incoming_public_key: keyPair().publicKeyPem, incoming_owner_identifier: 'taken-owner' });
    expect(codeOf(conflict)).toEqual([409, 'CUSTODY_TRANSFER_CONFLICT']);

    const revoked = await t.registerAgent();
    await t.request('POST', '/v1/me/passport/revoke', { token: revoked.apiKey });
    expect(codeOf(await intent(revoked, { incoming_public_key: keyPair().publicKeyPem, incoming_owner_identifier: 'x' }))).toEqual([403, 'PASSPORT_REVOKED']);

    const recovery = keyPair();
    const b = await t.registerAgent({ recovery_public_key: recovery.publicKeyPem });
    const pending = await intent(b, { incoming_public_key: keyPair().publicKeyPem, incoming_owner_identifier: 'later-owner' });
    t.clock.advance(DAY);
    const content = { agent_id: b.agentId, new_passport_public_key: keyPair().publicKeyPem };
    const s = await signed(t, b.agentId, 'svc.recovery.intent.v1', content, recovery, 'recovery');
    expect((await t.request('POST', '/v1/recovery/intent', { body: { ...content, challenge_id: s.challenge_id, recovery_signature: s.signature } })).status).toBe(201);
    const blocked = await intent(b, { incoming_public_key: keyPair().publicKeyPem, incoming_owner_identifier: 'x' });
    expect(codeOf(blocked)).toEqual([409, 'RECOVERY_INTENT_ALREADY_OPEN']);
    // A transfer started before the intent cannot complete while it is open (and its challenge expired anyway).
    expect(codeOf(await completeT(b, { transfer_id: pending.body.transfer_id, passport_signature: nodeSign(b.privateKeyPem, pending.body.sign_payload) }))).toEqual([409, 'RECOVERY_INTENT_ALREADY_OPEN']);
  });

  test('complete: 404 CUSTODY_TRANSFER_NOT_FOUND (unknown, malformed, another agent\'s), signature required and checked, replays and an expired challenge refused', async () => {
    const a = await t.registerAgent();
    const incoming = keyPair();
    const i = await intent(a, { incoming_public_key: incoming.publicKeyPem, incoming_owner_identifier: 'next-owner' });
    const other = await t.registerAgent();
    for (const transfer_id of [UNKNOWN, 'nope']) expect(codeOf(await completeT(a, { transfer_id, passport_signature: 'AAAA' }))).toEqual([404, 'CUSTODY_TRANSFER_NOT_FOUND']);
    expect(codeOf(await completeT(other, { transfer_id: i.body.transfer_id, passport_signature: nodeSign(other.privateKeyPem, i.body.sign_payload) }))).toEqual([404, 'CUSTODY_TRANSFER_NOT_FOUND']);
    const missing = await completeT(a, { transfer_id: i.body.transfer_id });
    expect(codeOf(missing)).toEqual([422, 'PASSPORT_SIGNATURE_REQUIRED']);
    // Signed by the incoming key, not the current passport: invalid (and the attempt uses the challenge).
    expect(codeOf(await completeT(a, { transfer_id: i.body.transfer_id, passport_signature: nodeSign(incoming.privateKeyPem, i.body.sign_payload) }))).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    expect(codeOf(await completeT(a, { transfer_id: i.body.transfer_id, passport_signature: nodeSign(a.privateKeyPem, i.body.sign_payload) }))).toEqual([409, 'CHALLENGE_ALREADY_USED']);
    // The signature of one transfer replayed onto another (other content, other challenge).
    const j = await intent(a, { incoming_public_key: incoming.publicKeyPem, incoming_owner_identifier: 'another-owner' });
    expect(codeOf(await completeT(a, { transfer_id: j.body.transfer_id, passport_signature: nodeSign(a.privateKeyPem, i.body.sign_payload) }))).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    const k = await intent(a, { incoming_public_key: incoming.publicKeyPem, incoming_owner_identifier: 'another-owner' });
    t.clock.advanceSeconds(t.config.core.challengeTtlSeconds + 1);
    expect(codeOf(await completeT(a, { transfer_id: k.body.transfer_id, passport_signature: nodeSign(a.privateKeyPem, k.body.sign_payload) }))).toEqual([401, 'CHALLENGE_EXPIRED']);
    const fresh = await intent(a, { incoming_public_key: incoming.publicKeyPem, incoming_owner_identifier: 'another-owner' });
    expect((await completeT(a, { transfer_id: fresh.body.transfer_id, passport_signature: nodeSign(a.privateKeyPem, fresh.body.sign_payload) })).status).toBe(200);
  });

  test('security: both routes need the root key (none or wrong 401; a scoped key or session token 403 ROOT_KEY_REQUIRED)', async () => {
    const a: RegisteredAgent = await t.registerAgent();
    const scoped = (await t.request('POST', '/v1/me/keys', { token: a.apiKey, body: { scopes: ['svc:search'] } })).body.api_key;
    const c = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
    const session = (await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: a.agentId, challenge_id: c.challenge_id, signature: nodeSign(a.privateKeyPem, c.sign_payload) } })).body.session_token;
    const k: KeyPair = keyPair();
    for (const [path, body] of [['/v1/me/custody/transfer/intent', { incoming_public_key: k.publicKeyPem, incoming_owner_identifier: 'x' }], ['/v1/me/custody/transfer/complete', { transfer_id: UNKNOWN, passport_signature: 'AAAA' }]] as const) {
      expect(codeOf(await t.request('POST', path, { body })), path).toEqual([401, 'INVALID_API_KEY']);
      expect(codeOf(await t.request('POST', path, { body, token: 'svc_wrong' })), path).toEqual([401, 'INVALID_API_KEY']);
      expect(codeOf(await t.request('POST', path, { body, token: scoped })), path).toEqual([403, 'ROOT_KEY_REQUIRED']);
      expect(codeOf(await t.request('POST', path, { body, token: session })), path).toEqual([403, 'ROOT_KEY_REQUIRED']);
    }
  });
});
