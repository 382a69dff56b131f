/**
 * Recovery with an owner-recovery-key covenant over HTTP, as the API's state table has it: intent
 * (signed by the recovery key), the public list, the 7-day veto window and the veto, initiate,
 * complete (a rebirth: old keys refused, a new root key, the intent's passport key, a new custody
 * epoch), every error code of each route, replayed signatures refused, openssl and node:crypto
 * signatures, the injected clock across the 24-hour grace and the 7-day window, lapse, rate limits,
 * a rebirth that fails leaving nothing changed, the trust log and a clean parity check.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { sql } from 'kysely';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';
import { admin, codeOf, DAY, HOUR, keyPair, logEntries, nodeSign, opensslKeyPair, signed, signedBytes, type KeyPair } from './custody-support';

const INTENT = 'svc.recovery.intent.v1';
const INITIATE = 'svc.recovery.initiate.v1';
const COMPLETE = 'svc.recovery.complete.v1';
const VETO = 'svc.recovery.veto.v1';
const UNKNOWN = '00000000-0000-4000-8000-000000000000';
let t: TestApp;

interface Enrolled { a: RegisteredAgent; recovery: KeyPair & { sign?: (b: string) => string } }

/** An agent with a recovery key whose enrolment grace has passed. */
async function enrolled(recovery: Enrolled['recovery'] = keyPair()): Promise<Enrolled> {
  const a = await t.registerAgent({ recovery_public_key: recovery.publicKeyPem });
  t.clock.advance(DAY);
  return { a, recovery };
}

async function openIntent(e: Enrolled, newKey: KeyPair = keyPair()) {
  const content = { agent_id: e.a.agentId, new_passport_public_key: newKey.publicKeyPem };
  const s = await signed(t, e.a.agentId, INTENT, content, e.recovery, 'recovery');
  const r = await t.request('POST', '/v1/recovery/intent', { body: { ...content, challenge_id: s.challenge_id, recovery_signature: s.signature } });
  return { r, newKey, intentId: r.body?.intent?.intent_id as string };
}

async function initiate(e: Enrolled) {
  const s = await signed(t, e.a.agentId, INITIATE, { agent_id: e.a.agentId }, e.recovery, 'recovery');
  return t.request('POST', '/v1/recovery/initiate', { body: { agent_id: e.a.agentId, challenge_id: s.challenge_id, recovery_signature: s.signature } });
}

async function complete(e: Enrolled, intentId: string, newKey: KeyPair, completion: { challenge_id: string; challenge_nonce: string }) {
  const bytes = signedBytes(COMPLETE, e.a.agentId, completion.challenge_id, completion.challenge_nonce, { intent_id: intentId });
  return t.request('POST', '/v1/recovery/complete', {
    body: { intent_id: intentId, challenge_id: completion.challenge_id, recovery_signature: e.recovery.sign ? e.recovery.sign(bytes) : nodeSign(e.recovery.privateKeyPem, bytes), passport_signature: nodeSign(newKey.privateKeyPem, bytes) },
  });
}

const veto = async (a: RegisteredAgent, intentId: string, signer: KeyPair = a) => {
  const s = await signed(t, a.agentId, VETO, { intent_id: intentId }, signer);
  return t.request('POST', '/v1/me/recovery/veto', { token: a.apiKey, body: { intent_id: intentId, challenge_id: s.challenge_id, passport_signature: s.signature } });
};

beforeAll(async () => {
  t = await startTestApp({ env: { SVC_RECOVERY_CALLS_PER_ADDRESS_PER_MINUTE: '10000', SVC_RECOVERY_CALLS_PER_AGENT_PER_HOUR: '10000' } });
});
afterAll(async () => {
  await t?.close();
});

describe('the whole path with an openssl recovery key', () => {
  test('intent, window, initiate, complete: the old keys are refused, the new root key and passport key work, a new epoch opens; the log proves each step', async () => {
    const ossl = opensslKeyPair();
    try {
      const e = await enrolled(ossl);
      const { a } = e;
      const scoped = (await t.request('POST', '/v1/me/keys', { token: a.apiKey, body: { scopes: ['svc:memory'] } })).body.api_key;
      const c = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
      const session = (await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: a.agentId, challenge_id: c.challenge_id, signature: nodeSign(a.privateKeyPem, c.sign_payload) } })).body.session_token;
      const openedAt = t.clock.now();

      const { r, newKey, intentId } = await openIntent(e);
      expect(r.status).toBe(201);
      expect(r.body.intent).toMatchObject({
        agent_id: a.agentId, state: 'open', tier: 'recovery_key', epoch: 1, new_passport_public_key: newKey.publicKeyPem, veto_window_open: true,
        opened_at: new Date(openedAt).toISOString(), veto_deadline: new Date(openedAt + 7 * DAY).toISOString(), lapses_at: new Date(openedAt + 14 * DAY).toISOString(),
      });
      const listed = await t.request('GET', `/v1/agents/${a.agentId}/recovery/intents`);
      expect(listed.body).toMatchObject({ status: 'success', agent_id: a.agentId, total: 1, intents: [{ intent_id: intentId, state: 'open' }] });
      expect(codeOf((await openIntent(e)).r)).toEqual([409, 'RECOVERY_INTENT_ALREADY_OPEN']);

      // The window is open: initiate and complete refuse, with Retry-After.
      t.clock.advance(7 * DAY - 1000);
      const early = await initiate(e);
      expect(codeOf(early)).toEqual([409, 'RECOVERY_VETO_WINDOW_ACTIVE']);
      expect(early.headers['retry-after']).toBe('1');
      expect(early.body.veto_deadline).toBe(new Date(openedAt + 7 * DAY).toISOString());
      const earlyComplete = await t.request('POST', '/v1/recovery/complete', { body: { intent_id: intentId } });
      expect(codeOf(earlyComplete)).toEqual([409, 'RECOVERY_VETO_WINDOW_ACTIVE']);
      // The holder still works meanwhile.
      expect((await t.request('GET', '/v1/me', { token: a.apiKey })).status).toBe(200);

      t.clock.advance(1000);
      expect(codeOf(await veto(a, intentId))).toEqual([409, 'RECOVERY_VETO_WINDOW_CLOSED']);
      // Complete before initiate: the intent is not initiated yet.
      const notYet = await t.request('POST', '/v1/recovery/complete', { body: { intent_id: intentId } });
      expect(codeOf(notYet)).toEqual([409, 'RECOVERY_INTENT_REQUIRED']);
      expect(notYet.body.initiate_url).toMatch(/\/v1\/recovery\/initiate$/);

      const init = await initiate(e);
      expect(init.status).toBe(200);
      expect(init.body.intent).toMatchObject({ intent_id: intentId, state: 'initiated' });
      const comp = init.body.completion;
      expect(comp).toMatchObject({ scheme: COMPLETE, content: { intent_id: intentId }, sign_payload_encoding: 'utf-8' });
      expect(comp.sign_payload).toBe(signedBytes(COMPLETE, a.agentId, comp.challenge_id, comp.challenge_nonce, { intent_id: intentId }));

      const done = await complete(e, intentId, newKey, comp);
      expect(done.status).toBe(200);
      expect(done.headers['cache-control']).toBe('no-store');
      expect(done.body).toMatchObject({
        status: 'success', agent_id: a.agentId, epoch: { closed: 1, opened: 2 }, scoped_keys_revoked: 1, staged_resurrection_until: null,
        passport: { did: `did:svc:${a.agentId}`, public_key: newKey.publicKeyPem }, intent: { state: 'completed' },
      });
      const newRoot = done.body.api_key as string;
      expect(newRoot).toMatch(/^svc_/);

      for (const [name, token] of [['old root', a.apiKey], ['scoped', scoped], ['session', session]]) {
        expect(codeOf(await t.request('GET', '/v1/me', { token })), name).toEqual([401, 'INVALID_API_KEY']);
      }
      const me = await t.request('GET', '/v1/me', { token: newRoot });
      expect(me.body).toMatchObject({ agent_id: a.agentId, authenticated_with: { kind: 'root' } });
      expect((await t.request('GET', `/v1/agents/${a.agentId}/passport`)).body.passport.public_key).toBe(newKey.publicKeyPem);
      // The new passport key verifies challenges; the old one no longer does.
      const c2 = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
      expect((await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: a.agentId, challenge_id: c2.challenge_id, signature: nodeSign(a.privateKeyPem, c2.sign_payload) } })).status).toBe(401);
      const c3 = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
      expect((await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: a.agentId, challenge_id: c3.challenge_id, signature: nodeSign(newKey.privateKeyPem, c3.sign_payload) } })).status).toBe(200);
      // The same completion again: no initiated intent.
      expect(codeOf(await complete(e, intentId, newKey, init.body.completion))).toEqual([409, 'RECOVERY_INTENT_REQUIRED']);

      const history = (await t.request('GET', `/v1/agents/${a.agentId}/reputation/history`)).body;
      expect(history).toMatchObject({ epoch: 2, current_epoch: 2 });
      expect(history.epochs.map((x: any) => [x.epoch, x.opened_by, x.closed_at === null])).toEqual([[1, 'registration', false], [2, 'recovery', true]]);

      const kinds = (await logEntries(t, a.agentId)).map((x) => [x.kind, x.epoch]);
      expect(kinds).toEqual([
        ['epoch.opened', 1], ['covenant.bound', 1], ['key.created', 1], ['recovery.intent.opened', 1], ['recovery.initiated', 1],
        ['key.revoked', 1], ['epoch.closed', 1], ['epoch.opened', 2], ['recovery.completed', 2],
      ]);
      const completed = (await logEntries(t, a.agentId)).find((x) => x.kind === 'recovery.completed')!;
      expect(completed.data).toMatchObject({ intent_id: intentId, tier: 'recovery_key', closed_epoch: 1, opened_epoch: 2, staged_resurrection_until: null });
      const parity = (await t.request('GET', '/admin/trust/parity-check', { headers: admin })).body;
      expect(parity.mismatches).toEqual([]);
      const trace = (await t.request('GET', `/admin/trust/decision-trace/${a.agentId}`, { headers: admin })).body;
      expect(trace.facts.recovery_intent.value).toEqual({ intent_id: intentId, state: 'completed' });
      expect(trace.facts.staged_resurrection.value).toBeNull();
      const adoption = (await t.request('GET', '/admin/trust/adoption', { headers: admin })).body;
      expect(adoption.custody).toMatchObject({ recovery_intents_by_state: { completed: 1, open: 0 }, staged_resurrections_active: 0 });
      expect(trace.facts.current_epoch.value).toBe(2);
    } finally {
      ossl.close();
    }
  });

  test('a revoked passport does not stop a recovery: challenges with purpose recovery, and the recovered passport is active again', async () => {
    const e = await enrolled();
    expect((await t.request('POST', '/v1/me/passport/revoke', { token: e.a.apiKey })).status).toBe(200);
    expect(codeOf(await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: e.a.agentId } }))).toEqual([403, 'PASSPORT_REVOKED']);
    const { r, newKey, intentId } = await openIntent(e);
    expect(r.status).toBe(201);
    t.clock.advance(7 * DAY);
    const init = await initiate(e);
    expect(init.status).toBe(200);
    const done = await complete(e, intentId, newKey, init.body.completion);
    expect(done.status).toBe(200);
    const passport = (await t.request('GET', `/v1/agents/${e.a.agentId}/passport`)).body.passport;
    expect(passport).toMatchObject({ public_key: newKey.publicKeyPem, revoked_at: null });
  });
});

describe('POST /v1/recovery/intent', () => {
  test('409 RECOVERY_COVENANT_REQUIRED: no covenant, a covenant without activation, a recovery key inside its 24-hour grace', async () => {
    const none = await t.registerAgent();
    const k = keyPair();
    const body = (id: string) => ({ agent_id: id, new_passport_public_key: keyPair().publicKeyPem });
    const r1 = await t.request('POST', '/v1/recovery/intent', { body: body(none.agentId) });
    expect(codeOf(r1)).toEqual([409, 'RECOVERY_COVENANT_REQUIRED']);
    expect(r1.body.reason).toBe('no_covenant');
    const later = await t.registerAgent();
    await t.request('POST', '/v1/me/covenant/amend', { token: later.apiKey, body: { template_id: 'successor-later', params: { successor_agent_id: none.agentId } } });
    const r2 = await t.request('POST', '/v1/recovery/intent', { body: body(later.agentId) });
    expect(codeOf(r2)).toEqual([409, 'RECOVERY_COVENANT_REQUIRED']);
    expect(r2.body).toMatchObject({ reason: 'no_activation', template_id: 'successor-later' });
    const fresh = await t.registerAgent({ recovery_public_key: k.publicKeyPem });
    const registeredAt = t.clock.now();
    t.clock.advance(DAY - 1);
    const r3 = await openIntent({ a: fresh, recovery: k });
    expect(codeOf(r3.r)).toEqual([409, 'RECOVERY_COVENANT_REQUIRED']);
    expect(r3.r.body).toMatchObject({ reason: 'enrolment_grace', usable_from: new Date(registeredAt + DAY).toISOString() });
    t.clock.advance(1);
    expect((await openIntent({ a: fresh, recovery: k })).r.status).toBe(201);
  });

  test('404 AGENT_NOT_FOUND, 422 INVALID_AGENT_ID, 422 INVALID_PASSPORT_PUBLIC_KEY', async () => {
    expect(codeOf(await t.request('POST', '/v1/recovery/intent', { body: { agent_id: UNKNOWN, new_passport_public_key: keyPair().publicKeyPem } }))).toEqual([404, 'AGENT_NOT_FOUND']);
    for (const agent_id of [undefined, 'nope', 5]) {
      expect(codeOf(await t.request('POST', '/v1/recovery/intent', { body: { agent_id, new_passport_public_key: keyPair().publicKeyPem } })), String(agent_id)).toEqual([422, 'INVALID_AGENT_ID']);
    }
    const e = await enrolled();
    for (const new_passport_public_key of [undefined, 'not a key', keyPair().privateKeyPem, Buffer.alloc(32).toString('base64')]) {
      const r = await t.request('POST', '/v1/recovery/intent', { body: { agent_id: e.a.agentId, new_passport_public_key } });
      expect(codeOf(r), String(new_passport_public_key).slice(0, 30)).toEqual([422, 'INVALID_PASSPORT_PUBLIC_KEY']);
    }
  });

  test('signatures: required; by the recovery key (not the passport key); over this content and this challenge only', async () => {
    const e = await enrolled();
    const newKey = keyPair();
    const content = { agent_id: e.a.agentId, new_passport_public_key: newKey.publicKeyPem };
    const send = (extra: object) => t.request('POST', '/v1/recovery/intent', { body: { ...content, ...extra } });
    const missing = await send({});
    expect(codeOf(missing)).toEqual([422, 'PASSPORT_SIGNATURE_REQUIRED']);
    expect(missing.body.missing).toEqual(['challenge_id', 'recovery_signature']);
    const byPassport = await signed(t, e.a.agentId, INTENT, content, e.a);
    expect(codeOf(await send({ challenge_id: byPassport.challenge_id, recovery_signature: byPassport.signature }))).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    const otherKey = await signed(t, e.a.agentId, INTENT, { ...content, new_passport_public_key: keyPair().publicKeyPem }, e.recovery);
    expect(codeOf(await send({ challenge_id: otherKey.challenge_id, recovery_signature: otherKey.signature }))).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    const good = await signed(t, e.a.agentId, INTENT, content, e.recovery);
    const fresh = await signed(t, e.a.agentId, INTENT, content, e.recovery);
    // The good signature on another challenge: refused (the challenge is in the signed bytes).
    expect(codeOf(await send({ challenge_id: fresh.challenge_id, recovery_signature: good.signature }))).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    expect(codeOf(await send({ challenge_id: UNKNOWN, recovery_signature: good.signature }))).toEqual([404, 'CHALLENGE_NOT_FOUND']);
    // Another agent's recovery key signing for this agent.
    const other = await enrolled();
    const foreign = await signed(t, e.a.agentId, INTENT, content, other.recovery);
    expect(codeOf(await send({ challenge_id: foreign.challenge_id, recovery_signature: foreign.signature }))).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    expect((await t.request('GET', `/v1/agents/${e.a.agentId}/recovery/intents`)).body.total).toBe(0);
    const ok = await signed(t, e.a.agentId, INTENT, content, e.recovery);
    expect((await send({ challenge_id: ok.challenge_id, recovery_signature: ok.signature })).status).toBe(201);
    expect(codeOf(await send({ challenge_id: ok.challenge_id, recovery_signature: ok.signature }))).toEqual([409, 'RECOVERY_INTENT_ALREADY_OPEN']);
  });

  test('GET /v1/agents/{agent_id}/recovery/intents: public, newest first, limit; 404 for an unknown or malformed id', async () => {
    const e = await enrolled();
    const first = await openIntent(e);
    expect((await veto(e.a, first.intentId)).status).toBe(200);
    const second = await openIntent(e);
    const all = await t.request('GET', `/v1/agents/${e.a.agentId}/recovery/intents`);
    expect(all.body.intents.map((i: any) => [i.intent_id, i.state])).toEqual([[second.intentId, 'open'], [first.intentId, 'vetoed']]);
    expect((await t.request('GET', `/v1/agents/${e.a.agentId}/recovery/intents?limit=1`)).body).toMatchObject({ total: 2, intents: [{ intent_id: second.intentId }] });
    expect(codeOf(await t.request('GET', `/v1/agents/${e.a.agentId}/recovery/intents?limit=0`))).toEqual([422, 'VALIDATION_FAILED']);
    for (const id of [UNKNOWN, 'x']) expect(codeOf(await t.request('GET', `/v1/agents/${id}/recovery/intents`))).toEqual([404, 'AGENT_NOT_FOUND']);
  });
});

describe('POST /v1/me/recovery/veto', () => {
  test('the holder vetoes inside the window (openssl passport key); a second veto 409 RECOVERY_INTENT_VETOED; initiate then answers RECOVERY_INTENT_VETOED', async () => {
    const ossl = opensslKeyPair();
    try {
      const recovery = keyPair();
      const a = await t.registerAgent({ recovery_public_key: recovery.publicKeyPem, passport_public_key: ossl.publicKeyPem });
      t.clock.advance(DAY);
      const e = { a, recovery };
      const { intentId } = await openIntent(e);
      t.clock.advance(7 * DAY - 1);
      const v = await veto(a, intentId, ossl);
      expect(v.status).toBe(200);
      expect(v.body.intent).toMatchObject({ intent_id: intentId, state: 'vetoed', vetoed_at: new Date(t.clock.now()).toISOString() });
      expect(codeOf(await veto(a, intentId, ossl))).toEqual([409, 'RECOVERY_INTENT_VETOED']);
      t.clock.advance(1);
      expect(codeOf(await initiate(e))).toEqual([409, 'RECOVERY_INTENT_VETOED']);
      const done = await t.request('POST', '/v1/recovery/complete', { body: { intent_id: intentId } });
      expect(codeOf(done)).toEqual([409, 'RECOVERY_INTENT_VETOED']);
      expect((await logEntries(t, a.agentId)).filter((x) => x.kind === 'recovery.intent.vetoed').map((x) => x.data.intent_id)).toEqual([intentId]);
    } finally {
      ossl.close();
    }
  });

  test('404 RECOVERY_INTENT_NOT_FOUND (unknown, another agent\'s); signatures required and checked; security', async () => {
    const e = await enrolled();
    const { intentId } = await openIntent(e);
    const other = await t.registerAgent();
    expect(codeOf(await veto(other, intentId))).toEqual([404, 'RECOVERY_INTENT_NOT_FOUND']);
    expect(codeOf(await veto(e.a, UNKNOWN))).toEqual([404, 'RECOVERY_INTENT_NOT_FOUND']);
    expect(codeOf(await veto(e.a, 'garbage'))).toEqual([404, 'RECOVERY_INTENT_NOT_FOUND']);
    const post = (token: string | undefined, body: object) => t.request('POST', '/v1/me/recovery/veto', { token, body });
    expect(codeOf(await post(e.a.apiKey, { intent_id: intentId }))).toEqual([422, 'PASSPORT_SIGNATURE_REQUIRED']);
    // The recovery key is not the holder's passport key.
    const wrong = await signed(t, e.a.agentId, VETO, { intent_id: intentId }, e.recovery);
    expect(codeOf(await post(e.a.apiKey, { intent_id: intentId, challenge_id: wrong.challenge_id, passport_signature: wrong.signature }))).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    const scoped = (await t.request('POST', '/v1/me/keys', { token: e.a.apiKey, body: { scopes: ['svc:search'] } })).body.api_key;
    const good = await signed(t, e.a.agentId, VETO, { intent_id: intentId }, e.a);
    const body = { intent_id: intentId, challenge_id: good.challenge_id, passport_signature: good.signature };
    expect(codeOf(await post(undefined, body))).toEqual([401, 'INVALID_API_KEY']);
    expect(codeOf(await post('svc_nope', body))).toEqual([401, 'INVALID_API_KEY']);
    expect(codeOf(await post(scoped, body))).toEqual([403, 'ROOT_KEY_REQUIRED']);
    expect((await t.request('GET', `/v1/agents/${e.a.agentId}/recovery/intents`)).body.intents[0].state).toBe('open');
    expect((await post(e.a.apiKey, body)).status).toBe(200);
  });
});

describe('POST /v1/recovery/initiate and /complete', () => {
  test('409 RECOVERY_INTENT_REQUIRED pointing at the intent route: no intent, a lapsed one (then a new intent may open)', async () => {
    const e = await enrolled();
    const none = await initiate(e);
    expect(codeOf(none)).toEqual([409, 'RECOVERY_INTENT_REQUIRED']);
    expect(none.body.intent_url).toMatch(/\/v1\/recovery\/intent$/);
    expect(codeOf(await t.request('POST', '/v1/recovery/initiate', { body: { agent_id: UNKNOWN } }))).toEqual([404, 'AGENT_NOT_FOUND']);
    expect(codeOf(await t.request('POST', '/v1/recovery/initiate', { body: { agent_id: 'x' } }))).toEqual([422, 'INVALID_AGENT_ID']);
    const { intentId } = await openIntent(e);
    t.clock.advance(14 * DAY);
    const listed = (await t.request('GET', `/v1/agents/${e.a.agentId}/recovery/intents`)).body.intents[0];
    expect(listed).toMatchObject({ intent_id: intentId, state: 'lapsed' });
    expect(codeOf(await initiate(e))).toEqual([409, 'RECOVERY_INTENT_REQUIRED']);
    expect((await openIntent(e)).r.status).toBe(201);
  });

  test('initiate and complete are each signed anew: missing or wrong signatures refused, the completion co-signed by the new passport key', async () => {
    const e = await enrolled();
    const { intentId, newKey } = await openIntent(e);
    t.clock.advance(7 * DAY);
    expect(codeOf(await t.request('POST', '/v1/recovery/initiate', { body: { agent_id: e.a.agentId } }))).toEqual([422, 'PASSPORT_SIGNATURE_REQUIRED']);
    const byNew = await signed(t, e.a.agentId, INITIATE, { agent_id: e.a.agentId }, newKey, 'recovery');
    expect(codeOf(await t.request('POST', '/v1/recovery/initiate', { body: { agent_id: e.a.agentId, challenge_id: byNew.challenge_id, recovery_signature: byNew.signature } }))).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    // An intent signature replayed as an initiation: other scheme, refused.
    const asIntent = await signed(t, e.a.agentId, INTENT, { agent_id: e.a.agentId }, e.recovery, 'recovery');
    expect(codeOf(await t.request('POST', '/v1/recovery/initiate', { body: { agent_id: e.a.agentId, challenge_id: asIntent.challenge_id, recovery_signature: asIntent.signature } }))).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    const init = await initiate(e);
    expect(init.status).toBe(200);
    // Initiating again gives a new completion challenge, no second log entry.
    const again = await initiate(e);
    expect(again.status).toBe(200);
    expect(again.body.completion.challenge_id).not.toBe(init.body.completion.challenge_id);
    expect((await logEntries(t, e.a.agentId)).filter((x) => x.kind === 'recovery.initiated')).toHaveLength(1);

    const comp = again.body.completion;
    const bytes = signedBytes(COMPLETE, e.a.agentId, comp.challenge_id, comp.challenge_nonce, { intent_id: intentId });
    const send = (body: object) => t.request('POST', '/v1/recovery/complete', { body: { intent_id: intentId, challenge_id: comp.challenge_id, ...body } });
    const onlyRecovery = await send({ recovery_signature: nodeSign(e.recovery.privateKeyPem, bytes) });
    expect(codeOf(onlyRecovery)).toEqual([422, 'PASSPORT_SIGNATURE_REQUIRED']);
    expect(onlyRecovery.body.missing).toEqual(['passport_signature']);
    // The new key's signature by another key: refused (this attempt used the challenge).
    const wrongNew = await send({ recovery_signature: nodeSign(e.recovery.privateKeyPem, bytes), passport_signature: nodeSign(keyPair().privateKeyPem, bytes) });
    expect(codeOf(wrongNew)).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    expect(wrongNew.body.field).toBe('body.passport_signature');
    expect(codeOf(await send({ recovery_signature: nodeSign(e.recovery.privateKeyPem, bytes), passport_signature: nodeSign(newKey.privateKeyPem, bytes) }))).toEqual([409, 'CHALLENGE_ALREADY_USED']);
    expect(codeOf(await t.request('POST', '/v1/recovery/complete', { body: { intent_id: UNKNOWN } }))).toEqual([404, 'RECOVERY_INTENT_NOT_FOUND']);
    expect(codeOf(await t.request('POST', '/v1/recovery/complete', { body: { intent_id: 'not-an-id' } }))).toEqual([404, 'RECOVERY_INTENT_NOT_FOUND']);
    const last = await initiate(e);
    expect((await complete(e, intentId, newKey, last.body.completion)).status).toBe(200);
  });

  test('409 RECOVERY_REBIRTH_FAILED when the agent was suspended meanwhile, 500 when the rebirth fails inside: nothing half-changed', async () => {
    const e = await enrolled();
    const { intentId, newKey } = await openIntent(e);
    t.clock.advance(7 * DAY);
    const init = await initiate(e);
    const logSize = async () => (await t.request('GET', '/v1/trust/log/entries?start=0&end=1')).body.tree_size as number;
    await t.database.db.updateTable('agents').set({ status: 'suspended' }).where('agent_id', '=', e.a.agentId).execute();
    const sizeBefore = await logSize();
    const suspended = await complete(e, intentId, newKey, init.body.completion);
    expect(codeOf(suspended)).toEqual([409, 'RECOVERY_REBIRTH_FAILED']);
    expect(suspended.body.reason).toBe('agent_inactive');
    expect(await logSize()).toBe(sizeBefore);
    await t.database.db.updateTable('agents').set({ status: 'active' }).where('agent_id', '=', e.a.agentId).execute();

    // The next epoch's row cannot be written: the transaction rolls back whole.
    const engine = t.database.engine;
    if (engine === 'sqlite') {
      await sql`CREATE TRIGGER refuse_recovery_epoch BEFORE INSERT ON agent_epochs WHEN NEW.opened_by = 'recovery' BEGIN SELECT RAISE(ABORT, 'refused by test'); END`.execute(t.database.db);
    } else {
      await sql`CREATE FUNCTION refuse_recovery_epoch() RETURNS trigger AS $$ BEGIN IF NEW.opened_by = 'recovery' THEN RAISE EXCEPTION 'refused by test'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`.execute(t.database.db);
      await sql`CREATE TRIGGER refuse_recovery_epoch BEFORE INSERT ON agent_epochs FOR EACH ROW EXECUTE FUNCTION refuse_recovery_epoch()`.execute(t.database.db);
    }
    try {
      const again = await initiate(e);
      const failed = await complete(e, intentId, newKey, again.body.completion);
      expect(codeOf(failed)).toEqual([500, 'RECOVERY_REBIRTH_FAILED']);
      expect(await logSize()).toBe(sizeBefore);
      expect((await t.request('GET', '/v1/me', { token: e.a.apiKey })).status).toBe(200);
      expect((await t.request('GET', `/v1/agents/${e.a.agentId}/passport`)).body.passport.public_key).toBe(e.a.publicKeyPem);
      expect((await t.request('GET', `/v1/agents/${e.a.agentId}/recovery/intents`)).body.intents[0].state).toBe('initiated');
    } finally {
      await sql`DROP TRIGGER refuse_recovery_epoch${engine === 'sqlite' ? sql`` : sql` ON agent_epochs`}`.execute(t.database.db);
      if (engine !== 'sqlite') await sql`DROP FUNCTION refuse_recovery_epoch()`.execute(t.database.db);
    }
    const last = await initiate(e);
    expect((await complete(e, intentId, newKey, last.body.completion)).status).toBe(200);
    expect((await t.request('GET', '/admin/trust/parity-check', { headers: admin })).body.mismatches).toEqual([]);
  });
});

describe('abuse protection', () => {
  test('429 RECOVERY_RATE_LIMITED per client address per minute and per agent per hour, with Retry-After', async () => {
    const limited = await startTestApp({ env: { SVC_RECOVERY_CALLS_PER_ADDRESS_PER_MINUTE: '3', SVC_RECOVERY_CALLS_PER_AGENT_PER_HOUR: '5' } });
    try {
      const a = await limited.registerAgent();
      const call = () => limited.request('POST', '/v1/recovery/initiate', { body: { agent_id: a.agentId } });
      for (let i = 0; i < 3; i++) expect(codeOf(await call())).toEqual([409, 'RECOVERY_INTENT_REQUIRED']);
      const r = await call();
      expect(codeOf(r)).toEqual([429, 'RECOVERY_RATE_LIMITED']);
      expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
      limited.clock.advance(60_000);
      for (let i = 0; i < 2; i++) expect(codeOf(await call())).toEqual([409, 'RECOVERY_INTENT_REQUIRED']);
      limited.clock.advance(60_000);
      const perAgent = await call();
      expect(codeOf(perAgent)).toEqual([429, 'RECOVERY_RATE_LIMITED']);
      expect(perAgent.body.message).toMatch(/for this agent/);
    } finally {
      await limited.close();
    }
  });
});
