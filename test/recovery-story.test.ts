/**
 * The recovery story end to end: an agent registers with a recovery key, earns ratings, loses its
 * root key, recovers through its covenant (every step signed with openssl), and then the old key is
 * refused, the new key works, its reputation history is split by custody epoch, and the trust log
 * proves each step: every entry of the story is included in a signed checkpoint, checked by a
 * verifier written here from RFC 9162 and C2SP signed-note (nothing of svc's Merkle code).
 */
import { createHash, createPublicKey, verify } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestApp, type TestApp } from './helpers/harness';
import { codeOf, DAY, logEntries, nodeSign, opensslKeyPair, signedBytes } from './custody-support';

import { leafOf, rootFromInclusion } from './helpers/rfc9162';

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ env: { SVC_TRUST_CHECKPOINT_INTERVAL_MS: '0' } });
});
afterAll(async () => {
  await t?.close();
});

async function rate(subject: string, ref: string) {
  const rater = await t.registerAgent();
  const r = await t.request('POST', '/v1/feedback/interaction', { token: rater.apiKey, body: { subject_agent_id: subject, ref_type: 'task', ref_id: ref, outcome: 'approved', category: 'accuracy' } });
  expect(r.status).toBe(201);
}

async function recoveryChallenge(agentId: string) {
  return (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: agentId, purpose: 'recovery' } })).body as { challenge_id: string; challenge_nonce: string };
}

test('register with a recovery key, lose the root key, recover: old key refused, new key working, history split by epoch, each step proved by the log', async () => {
  const recovery = opensslKeyPair();
  const newPassport = opensslKeyPair();
  try {
    // ---- epoch 1: registered with a recovery key, rated three times ----
    const a = await t.registerAgent({ recovery_public_key: recovery.publicKeyPem });
    for (const ref of ['t1', 't2', 't3']) await rate(a.agentId, ref);
    const lostRootKey = a.apiKey; // the owner loses it: from here only the recovery key is used

    // ---- the recovery, every step signed with openssl ----
    t.clock.advance(DAY);
    const c1 = await recoveryChallenge(a.agentId);
    const content = { agent_id: a.agentId, new_passport_public_key: newPassport.publicKeyPem };
    const opened = await t.request('POST', '/v1/recovery/intent', {
      body: { ...content, challenge_id: c1.challenge_id, recovery_signature: recovery.sign(signedBytes('svc.recovery.intent.v1', a.agentId, c1.challenge_id, c1.challenge_nonce, content)) },
    });
    expect(opened.status).toBe(201);
    const intentId = opened.body.intent.intent_id as string;
    t.clock.advance(7 * DAY);
    const c2 = await recoveryChallenge(a.agentId);
    const init = await t.request('POST', '/v1/recovery/initiate', {
      body: { agent_id: a.agentId, challenge_id: c2.challenge_id, recovery_signature: recovery.sign(signedBytes('svc.recovery.initiate.v1', a.agentId, c2.challenge_id, c2.challenge_nonce, { agent_id: a.agentId })) },
    });
    expect(init.status).toBe(200);
    const payload = init.body.completion.sign_payload as string;
    const done = await t.request('POST', '/v1/recovery/complete', {
      body: { intent_id: intentId, challenge_id: init.body.completion.challenge_id, recovery_signature: recovery.sign(payload), passport_signature: newPassport.sign(payload) },
    });
    expect(done.status).toBe(200);
    const newRootKey = done.body.api_key as string;

    // ---- the old key is refused, the new one works ----
    expect(codeOf(await t.request('GET', '/v1/me', { token: lostRootKey }))).toEqual([401, 'INVALID_API_KEY']);
    expect((await t.request('GET', '/v1/me', { token: newRootKey })).body).toMatchObject({ agent_id: a.agentId, staged_resurrection_until: null });
    expect((await t.request('PUT', '/v1/memory/after.recovery', { token: newRootKey, body: { value: 'back' } })).status).toBe(200);

    // ---- epoch 2: rated twice; the history is split by epoch ----
    for (const ref of ['t4', 't5']) await rate(a.agentId, ref);
    const current = (await t.request('GET', `/v1/agents/${a.agentId}/reputation/history?include_events=true`)).body;
    expect(current).toMatchObject({ epoch: 2, current_epoch: 2, reputation: { event_count: 2 } });
    expect(current.events.map((e: any) => e.ref_id).sort()).toEqual(['t4', 't5']);
    const prior = (await t.request('GET', `/v1/agents/${a.agentId}/reputation/history?epoch=1&include_events=true`)).body;
    expect(prior).toMatchObject({ epoch: 1, reputation: { event_count: 3 } });
    expect(prior.events.map((e: any) => e.ref_id).sort()).toEqual(['t1', 't2', 't3']);
    expect(prior.epochs.map((e: any) => [e.epoch, e.opened_by])).toEqual([[1, 'registration'], [2, 'recovery']]);

    // ---- the log proves each step: signed checkpoint, leaf hashes, inclusion proofs ----
    const note = (await t.request('GET', '/v1/trust/log/checkpoint')).raw;
    const [body, sigs] = note.split('\n\n');
    const [origin, sizeText, rootText] = body.split('\n');
    const known = (await t.request('GET', '/.well-known/svc-trust-log.json')).body;
    const sigLine = sigs.split('\n').find((l) => l.startsWith(`\u2014 ${origin} `)) as string;
    const blob = Buffer.from(sigLine.split(' ')[2], 'base64');
    expect(verify(null, Buffer.from(`${body}\n`), createPublicKey(known.public_key), blob.subarray(4))).toBe(true);
    const size = Number(sizeText);
    const root = Buffer.from(rootText, 'base64');

    const story = await logEntries(t, a.agentId);
    const steps = ['epoch.opened', 'covenant.bound', 'recovery.intent.opened', 'recovery.initiated', 'epoch.closed', 'epoch.opened', 'recovery.completed'];
    const proved = story.filter((e) => steps.includes(e.kind));
    expect(proved.map((e) => [e.kind, e.epoch])).toEqual([
      ['epoch.opened', 1], ['covenant.bound', 1], ['recovery.intent.opened', 1], ['recovery.initiated', 1], ['epoch.closed', 1], ['epoch.opened', 2], ['recovery.completed', 2],
    ]);
    for (const e of proved) {
      const got = (await t.request('GET', `/v1/trust/log/entries?start=${e.index}&end=${e.index + 1}`)).body.entries[0];
      const leaf = leafOf(Buffer.from(got.entry_jcs, 'utf8'));
      expect(leaf.toString('base64'), e.kind).toBe(got.leaf_hash);
      const proof = (await t.request('GET', `/v1/trust/log/proof/inclusion?index=${e.index}&tree_size=${size}`)).body.hashes.map((h: string) => Buffer.from(h, 'base64'));
      expect(rootFromInclusion(e.index, size, leaf, proof)?.equals(root), `${e.kind} at ${e.index}`).toBe(true);
    }
    const completed = proved.at(-1)!;
    const sha256Of = (pem: string) => createHash('sha256').update(createPublicKey(pem).export({ format: 'der', type: 'spki' })).digest('hex');
    expect(completed.data).toMatchObject({
      intent_id: intentId, closed_epoch: 1, opened_epoch: 2, new_passport_public_key_sha256: sha256Of(newPassport.publicKeyPem),
      previous_passport_public_key_sha256: sha256Of(a.publicKeyPem),
    });
    expect(proved[1].data.recovery_key.sha256).toBe(sha256Of(recovery.publicKeyPem));
    // A session with the new passport key, and none with the old one.
    const c = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
    expect((await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: a.agentId, challenge_id: c.challenge_id, signature: newPassport.sign(c.sign_payload) } })).status).toBe(200);
    const c3 = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
    expect((await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: a.agentId, challenge_id: c3.challenge_id, signature: nodeSign(a.privateKeyPem, c3.sign_payload) } })).status).toBe(401);
  } finally {
    recovery.close();
    newPassport.close();
  }
});
