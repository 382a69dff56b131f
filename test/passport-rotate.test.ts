/**
 * POST /v1/me/passport/rotate (root key): the new key with its proof of possession (its signature
 * over a fresh challenge's sign_payload), keys and signatures from node:crypto and from the openssl
 * command line; the replaced key verifying challenges for 300 s more and never after (the injected
 * clock), the sessions issued under it lasting as long; the passport.rotated trust log entry and the
 * parity check; every error code and the route's security.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generateEd25519 } from '../src/lib/ed25519';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';
import {
  challengeOf, keyOfPem, logEntry, logSize, nodeKey, opensslKey, parity, spkiSha256, verifyWith, type KeyPair,
} from './passport-lifecycle-support';

let t: TestApp;
const GRACE_MS = 300_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

beforeAll(async () => {
  // The token cache on: a grace's end must reach sessions a cached lookup already vouched for.
  t = await startTestApp({ env: { SVC_AUTH_CACHE_MS: '60000' } });
});
afterAll(async () => t?.close());

const keyOf = (a: RegisteredAgent): KeyPair => keyOfPem(a.publicKeyPem, a.privateKeyPem);
const rotate = (token: string | undefined, body: unknown) => t.request('POST', '/v1/me/passport/rotate', { token, body: body as object });

/** A rotation request for `agent` to `next`, its proof signed by `signer` (the new key unless told). */
async function rotationBody(agent: RegisteredAgent, next: KeyPair, opts: { signer?: KeyPair; form?: 'pem' | 'raw' } = {}) {
  const c = await challengeOf(t, agent.agentId);
  return { public_key: opts.form === 'raw' ? next.publicKeyRaw : next.publicKeyPem, challenge_id: c.challenge_id, signature: (opts.signer ?? next).sign(c.sign_payload) };
}

async function rotateTo(agent: RegisteredAgent, next: KeyPair, form: 'pem' | 'raw' = 'pem') {
  const r = await rotate(agent.apiKey, await rotationBody(agent, next, { form }));
  expect(r.status, r.raw).toBe(200);
  return r.body;
}

const currentKey = async (agentId: string) => (await t.request('GET', `/v1/agents/${agentId}/passport`)).body.passport.public_key as string;
const me = (token: string) => t.request('GET', '/v1/me', { token });

describe('rotation', () => {
  test('200: the new key is the passport key; the answer names both keys; a passport.rotated log entry in the same change; parity agrees', async () => {
    const a = await t.registerAgent();
    const next = nodeKey();
    const before = await logSize(t);
    const body = await rotateTo(a, next);
    const now = t.clock.now();
    expect(body).toEqual({
      status: 'success', agent_id: a.agentId, did: `did:svc:${a.agentId}`,
      public_key: next.publicKeyPem, public_key_sha256: spkiSha256(next.publicKeyPem), key_algorithm: 'ed25519',
      derivation_method: 'operator_derived', key_version: 1, rotated_at: new Date(now).toISOString(),
      previous_public_key_sha256: spkiSha256(a.publicKeyPem), previous_key_valid_until: new Date(now + GRACE_MS).toISOString(),
      rotation_grace_seconds: 300, log_index: before,
    });
    expect(await currentKey(a.agentId)).toBe(next.publicKeyPem);
    expect((await t.request('GET', `/v1/agents/${a.agentId}/passport`)).body.passport.derivation_method).toBe('operator_derived');
    expect(await logSize(t)).toBe(before + 1);
    const entry = await logEntry(t, before);
    expect(entry).toMatchObject({
      kind: 'passport.rotated', agent_id: a.agentId, epoch: 1, at: new Date(now).toISOString(),
      data: {
        previous_public_key_sha256: spkiSha256(a.publicKeyPem), public_key_sha256: spkiSha256(next.publicKeyPem), key_version: 1,
        grace_seconds: 300, previous_key_valid_until: new Date(now + GRACE_MS).toISOString(),
      },
    });
    expect(entry.data.challenge_id).toMatch(UUID);
    expect(JSON.stringify(entry)).not.toContain('BEGIN PUBLIC KEY');
    expect(await parity(t)).toMatchObject({ ok: true, mismatch_count: 0 });
  });

  test('the new key as base64 of its raw 32 bytes; the stored and shown key is its PEM SPKI', async () => {
    const a = await t.registerAgent();
    const next = nodeKey();
    const body = await rotateTo(a, next, 'raw');
    expect(body.public_key).toBe(next.publicKeyPem);
    expect(await currentKey(a.agentId)).toBe(next.publicKeyPem);
    expect((await verifyWith(t, a.agentId, next)).status).toBe(200);
  });

  test('the replaced key verifies challenges for 300 s more, then never; the new key from the start', async () => {
    const a = await t.registerAgent();
    const old = keyOf(a);
    const next = nodeKey();
    await rotateTo(a, next);
    expect((await verifyWith(t, a.agentId, next)).status).toBe(200);
    t.clock.advance(GRACE_MS - 1);
    const inGrace = await verifyWith(t, a.agentId, old);
    expect(inGrace.status, inGrace.raw).toBe(200);
    t.clock.advance(1);
    const after = await verifyWith(t, a.agentId, old);
    expect([after.status, after.body.error_code]).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    t.clock.advanceDays(3);
    expect((await verifyWith(t, a.agentId, old)).status).toBe(401);
    expect((await verifyWith(t, a.agentId, next)).status).toBe(200);
  });

  test('sessions issued under the replaced key (before or during the grace) work until the grace ends, cached or not; the new key\'s sessions go on', async () => {
    const a = await t.registerAgent();
    const old = keyOf(a);
    const next = nodeKey();
    const before = (await verifyWith(t, a.agentId, old)).body.session_token as string;
    expect((await me(before)).status).toBe(200); // cached now
    const rotatedAt = t.clock.now();
    await rotateTo(a, next);
    t.clock.advance(120_000);
    const during = await verifyWith(t, a.agentId, old);
    expect(during.status).toBe(200);
    // A session issued on the replaced key says when it really ends: at the grace's end.
    expect(during.body.expires_at).toBe(new Date(rotatedAt + GRACE_MS).toISOString());
    expect(during.body.expires_in).toBe(180);
    const fresh = (await verifyWith(t, a.agentId, next)).body.session_token as string;
    for (const s of [before, during.body.session_token, fresh]) expect((await me(s)).status).toBe(200);
    // Looked up (and cached, for 60 s) one millisecond before the grace ends; refused one after.
    t.clock.set(rotatedAt + GRACE_MS - 1);
    for (const s of [before, during.body.session_token, fresh]) expect((await me(s)).status).toBe(200);
    t.clock.set(rotatedAt + GRACE_MS);
    for (const s of [before, during.body.session_token]) {
      const r = await me(s);
      expect([r.status, r.body.error_code]).toEqual([401, 'INVALID_API_KEY']);
    }
    expect((await me(fresh)).status).toBe(200);
    expect((await me(a.apiKey)).status).toBe(200);
  });

  test('openssl: a key made by openssl rotates in with its openssl proof; the old (openssl) key verifies in the grace and not after; openssl signatures verify with the new key', async () => {
    const first = opensslKey();
    const second = opensslKey();
    try {
      const a = await t.registerAgent({ passport_public_key: first.publicKeyPem });
      expect((await verifyWith(t, a.agentId, first)).status).toBe(200);
      const r = await rotate(a.apiKey, await rotationBody(a, second));
      expect(r.status, r.raw).toBe(200);
      expect(r.body.previous_public_key_sha256).toBe(spkiSha256(first.publicKeyPem));
      expect(r.body.public_key_sha256).toBe(spkiSha256(second.publicKeyPem));
      expect((await verifyWith(t, a.agentId, second)).status).toBe(200);
      t.clock.advance(GRACE_MS - 1000);
      expect((await verifyWith(t, a.agentId, first)).status).toBe(200);
      t.clock.advance(1000);
      const late = await verifyWith(t, a.agentId, first);
      expect([late.status, late.body.error_code]).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
      // openssl's key again, its raw form, proof signed by openssl; then node's key back in.
      const third = nodeKey();
      const r3 = await rotate(a.apiKey, await rotationBody(a, third));
      expect(r3.status).toBe(200);
      expect((await verifyWith(t, a.agentId, second)).status).toBe(200); // second is now in its grace
      expect((await verifyWith(t, a.agentId, third)).status).toBe(200);
    } finally {
      first.dispose();
      second.dispose();
    }
  });

  test('a second rotation inside the grace: the key two back stops at once, the one just replaced has its own 300 s', async () => {
    const a = await t.registerAgent();
    const k1 = keyOf(a);
    const k2 = nodeKey();
    const k3 = nodeKey();
    await rotateTo(a, k2);
    t.clock.advance(60_000);
    const second = await rotateTo(a, k3);
    expect(second.key_version).toBe(2);
    expect(second.previous_public_key_sha256).toBe(spkiSha256(k2.publicKeyPem));
    expect((await verifyWith(t, a.agentId, k1)).status).toBe(401);
    expect((await verifyWith(t, a.agentId, k2)).status).toBe(200);
    t.clock.advance(GRACE_MS);
    expect((await verifyWith(t, a.agentId, k2)).status).toBe(401);
    expect((await verifyWith(t, a.agentId, k3)).status).toBe(200);
    expect(await parity(t)).toMatchObject({ ok: true });
  });

  test('rotating back to a key used before is allowed (it is a new rotation)', async () => {
    const a = await t.registerAgent();
    const k1 = keyOf(a);
    await rotateTo(a, nodeKey());
    const back = await rotateTo(a, k1);
    expect(back.key_version).toBe(2);
    expect(await currentKey(a.agentId)).toBe(a.publicKeyPem);
  });

  test('revoking the passport ends a running grace (and the parity check follows it)', async () => {
    const a = await t.registerAgent();
    const next = nodeKey();
    await rotateTo(a, next);
    expect((await t.request('POST', '/v1/me/passport/revoke', { token: a.apiKey })).status).toBe(200);
    const row = await t.database.db.selectFrom('passport_rotations').selectAll().where('agent_id', '=', a.agentId).executeTakeFirstOrThrow();
    expect(Number(row.grace_until)).toBe(t.clock.now());
    expect(await parity(t)).toMatchObject({ ok: true });
  });

  test('concurrent rotations of one agent are applied one after the other: both answer 200, the versions are 1 and 2, parity agrees', async () => {
    const a = await t.registerAgent();
    const [x, y] = [nodeKey(), nodeKey()];
    const [bx, by] = [await rotationBody(a, x), await rotationBody(a, y)];
    const results = await Promise.all([rotate(a.apiKey, bx), rotate(a.apiKey, by)]);
    expect(results.map((r) => r.status)).toEqual([200, 200]);
    expect(results.map((r) => r.body.key_version).sort()).toEqual([1, 2]);
    const last = results.find((r) => r.body.key_version === 2)!;
    expect(await currentKey(a.agentId)).toBe(last.body.public_key);
    const first = results.find((r) => r.body.key_version === 1)!;
    expect(last.body.previous_public_key_sha256).toBe(first.body.public_key_sha256);
    expect(await parity(t)).toMatchObject({ ok: true });
  });

  test('a passport_rotations row altered behind the service is a parity mismatch', async () => {
    const a = await t.registerAgent();
    await rotateTo(a, nodeKey());
    const db = t.database.db;
    const row = await db.selectFrom('passport_rotations').selectAll().where('agent_id', '=', a.agentId).executeTakeFirstOrThrow();
    await db.updateTable('passport_rotations').set({ grace_until: Number(row.grace_until) + 3_600_000 }).where('agent_id', '=', a.agentId).execute();
    try {
      const p = await parity(t);
      expect(p.ok).toBe(false);
      expect(p.mismatches).toContainEqual(expect.objectContaining({ projection: 'passport_rotations', key: a.agentId, field: 'grace_until' }));
    } finally {
      await db.updateTable('passport_rotations').set({ grace_until: row.grace_until }).where('agent_id', '=', a.agentId).execute();
    }
    expect(await parity(t)).toMatchObject({ ok: true });
  });
});

describe('errors', () => {
  let a: RegisteredAgent;
  let b: RegisteredAgent;
  beforeAll(async () => {
    a = await t.registerAgent();
    b = await t.registerAgent();
  });

  /** A refused rotation changes nothing: the key, the log and the projection stay. */
  async function refused(token: string | undefined, body: unknown, status: number, code: string) {
    const size = await logSize(t);
    const key = await currentKey(a.agentId);
    const r = await rotate(token, body);
    expect([r.status, r.body.error_code], r.raw).toEqual([status, code]);
    expect(await currentKey(a.agentId)).toBe(key);
    expect(await logSize(t)).toBe(size);
    return r;
  }

  test('401 INVALID_API_KEY: no key, an unknown key', async () => {
    const body = await rotationBody(a, nodeKey());
    await refused(undefined, body, 401, 'INVALID_API_KEY');
    await refused('svc_not-a-real-key-000000000000000000000000000', body, 401, 'INVALID_API_KEY');
  });

  test('403 ROOT_KEY_REQUIRED: a scoped key, a session token, an ephemeral passport\'s session token', async () => {
    const scoped = (await t.request('POST', '/v1/me/keys', { token: a.apiKey, body: { scopes: ['svc:memory', 'svc:search', 'svc:browse', 'svc:commons-read', 'svc:blob-store'] } })).body.api_key;
    const session = (await verifyWith(t, a.agentId, keyOf(a))).body.session_token;
    const ephemeral = (await t.request('POST', '/v1/auth/passport/ephemeral', { token: a.apiKey, body: {} })).body.session_token;
    for (const token of [scoped, session, ephemeral]) {
      expect(token).toMatch(/^svc_/);
      await refused(token, await rotationBody(a, nodeKey()), 403, 'ROOT_KEY_REQUIRED');
    }
  });

  test('another agent\'s root key with this agent\'s challenge: 404 CHALLENGE_NOT_FOUND (the bearer decides whose passport), neither key changes', async () => {
    const next = nodeKey();
    const c = await challengeOf(t, a.agentId);
    const r = await refused(b.apiKey, { public_key: next.publicKeyPem, challenge_id: c.challenge_id, signature: next.sign(c.sign_payload) }, 404, 'CHALLENGE_NOT_FOUND');
    expect(r.body.message).toMatch(/this agent/);
    expect(await currentKey(b.agentId)).toBe(b.publicKeyPem);
  });

  test('422 INVALID_PASSPORT_PUBLIC_KEY: missing, not a string, not a key, a private key, a raw key of the wrong length, a point of small order', async () => {
    const c = await challengeOf(t, a.agentId);
    const base = { challenge_id: c.challenge_id, signature: 'A'.repeat(86) + '==' };
    const { privateKeyPem } = generateEd25519();
    for (const public_key of [undefined, 42, '', 'hello', privateKeyPem, Buffer.alloc(31, 1).toString('base64'), Buffer.alloc(32).toString('base64')]) {
      await refused(a.apiKey, { ...base, ...(public_key === undefined ? {} : { public_key }) }, 422, 'INVALID_PASSPORT_PUBLIC_KEY');
    }
    // The challenge was not spent on a request refused before the signature was looked at.
    const next = nodeKey();
    expect((await rotate(a.apiKey, { public_key: next.publicKeyPem, challenge_id: c.challenge_id, signature: next.sign(c.sign_payload) })).status).toBe(200);
  });

  test('422 PASSPORT_SIGNATURE_REQUIRED: challenge_id or signature missing, empty or not a string', async () => {
    const next = nodeKey();
    const body = await rotationBody(a, next);
    for (const drop of ['challenge_id', 'signature'] as const) {
      const { [drop]: _gone, ...rest } = body;
      await refused(a.apiKey, rest, 422, 'PASSPORT_SIGNATURE_REQUIRED');
      await refused(a.apiKey, { ...body, [drop]: '' }, 422, 'PASSPORT_SIGNATURE_REQUIRED');
      await refused(a.apiKey, { ...body, [drop]: 7 }, 422, 'PASSPORT_SIGNATURE_REQUIRED');
    }
  });

  test('404 CHALLENGE_NOT_FOUND: an unknown id, a malformed one, another agent\'s challenge', async () => {
    const next = nodeKey();
    const own = await rotationBody(a, next);
    await refused(a.apiKey, { ...own, challenge_id: '00000000-0000-4000-8000-000000000000' }, 404, 'CHALLENGE_NOT_FOUND');
    await refused(a.apiKey, { ...own, challenge_id: 'not-a-uuid' }, 404, 'CHALLENGE_NOT_FOUND');
    const theirs = await challengeOf(t, b.agentId);
    await refused(a.apiKey, { public_key: next.publicKeyPem, challenge_id: theirs.challenge_id, signature: next.sign(theirs.sign_payload) }, 404, 'CHALLENGE_NOT_FOUND');
    // Neither b's challenge nor b's passport was touched.
    expect((await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: b.agentId, challenge_id: theirs.challenge_id, signature: keyOf(b).sign(theirs.sign_payload) } })).status).toBe(200);
  });

  test('401 PASSPORT_SIGNATURE_INVALID: signed by the current key instead of the new one, over other bytes, not base64, zero bytes; the attempt spends the challenge (409 CHALLENGE_ALREADY_USED after)', async () => {
    const current = keyOf(b);
    const next = nodeKey();
    const signatures = [
      (payload: string) => current.sign(payload), // the old key cannot prove possession of the new one
      () => next.sign('svc.passport.challenge.v1\nsomething else'),
      () => '%%%not base64%%%',
      () => Buffer.alloc(64).toString('base64'),
    ];
    for (const signature of signatures) {
      const c = await challengeOf(t, b.agentId);
      const r = await rotate(b.apiKey, { public_key: next.publicKeyPem, challenge_id: c.challenge_id, signature: signature(c.sign_payload) });
      expect([r.status, r.body.error_code], r.raw).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
      const again = await rotate(b.apiKey, { public_key: next.publicKeyPem, challenge_id: c.challenge_id, signature: next.sign(c.sign_payload) });
      expect([again.status, again.body.error_code]).toEqual([409, 'CHALLENGE_ALREADY_USED']);
    }
    expect(await currentKey(b.agentId)).toBe(b.publicKeyPem);
  });

  test('409 CHALLENGE_ALREADY_USED: a challenge spent by a session exchange or by a rotation', async () => {
    const c = await challengeOf(t, b.agentId);
    expect((await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: b.agentId, challenge_id: c.challenge_id, signature: keyOf(b).sign(c.sign_payload) } })).status).toBe(200);
    const next = nodeKey();
    const r = await rotate(b.apiKey, { public_key: next.publicKeyPem, challenge_id: c.challenge_id, signature: next.sign(c.sign_payload) });
    expect([r.status, r.body.error_code]).toEqual([409, 'CHALLENGE_ALREADY_USED']);
    expect(await currentKey(b.agentId)).toBe(b.publicKeyPem);
  });

  test('401 CHALLENGE_EXPIRED: a challenge past its expires_at', async () => {
    const next = nodeKey();
    const body = await rotationBody(b, next);
    t.clock.advanceSeconds(t.config.core.challengeTtlSeconds);
    const r = await rotate(b.apiKey, body);
    expect([r.status, r.body.error_code]).toEqual([401, 'CHALLENGE_EXPIRED']);
    expect(await currentKey(b.agentId)).toBe(b.publicKeyPem);
  });

  test('409 PASSPORT_KEY_UNCHANGED: the new key is the current one (PEM or raw), and no challenge is spent on it', async () => {
    const same = keyOf(b);
    for (const form of ['pem', 'raw'] as const) {
      const body = await rotationBody(b, same, { form });
      const r = await rotate(b.apiKey, body);
      expect([r.status, r.body.error_code]).toEqual([409, 'PASSPORT_KEY_UNCHANGED']);
      expect((await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: b.agentId, challenge_id: body.challenge_id, signature: body.signature } })).status).toBe(200);
    }
  });

  test('403 PASSPORT_REVOKED: a revoked passport cannot rotate (the root key still reaches the account)', async () => {
    const c = await t.registerAgent();
    const next = nodeKey();
    const body = await rotationBody(c, next);
    expect((await t.request('POST', '/v1/me/passport/revoke', { token: c.apiKey })).status).toBe(200);
    const size = await logSize(t);
    const r = await rotate(c.apiKey, body);
    expect([r.status, r.body.error_code]).toEqual([403, 'PASSPORT_REVOKED']);
    expect(await logSize(t)).toBe(size);
    expect(await currentKey(c.agentId)).toBe(c.publicKeyPem);
  });

  test('after every refusal above the parity check is clean', async () => {
    expect(await parity(t)).toMatchObject({ ok: true, mismatch_count: 0 });
  });
});

describe('discovery', () => {
  test('capabilities, OpenAPI and the passport tool state the route: root key, its body, every code it gives', async () => {
    const caps = (await t.request('GET', '/v1/capabilities')).body;
    expect(caps.endpoints).toContainEqual(expect.objectContaining({ method: 'POST', path: '/v1/me/passport/rotate', auth: 'root' }));
    expect(caps.authentication.root_key_required.endpoints).toContain('POST /v1/me/passport/rotate');
    expect(caps.authentication.scoped_keys.refused_endpoints).toContain('POST /v1/me/passport/rotate');
    expect(caps.passport).toMatchObject({ rotation_grace_seconds: 300, rotation: { endpoint: 'POST /v1/me/passport/rotate', auth: 'root key', trust_log_kind: 'passport.rotated' } });
    expect(caps.passport.endpoints.map((e: { path: string }) => e.path)).toContain('/v1/me/passport/rotate');

    const op = (await t.request('GET', '/openapi.json')).body.paths['/v1/me/passport/rotate'].post;
    expect(op['x-svc-auth']).toBe('root');
    expect(op['x-svc-scope']).toBeNull();
    expect(op.requestBody.content['application/json'].schema.required).toEqual(['public_key', 'challenge_id', 'signature']);
    const codes = (status: number) => op.responses[String(status)].content['application/json'].schema['x-svc-error-codes'];
    expect(codes(401)).toEqual(expect.arrayContaining(['INVALID_API_KEY', 'PASSPORT_SIGNATURE_INVALID', 'CHALLENGE_EXPIRED']));
    expect(codes(403)).toEqual(expect.arrayContaining(['ROOT_KEY_REQUIRED', 'PASSPORT_REVOKED']));
    expect(codes(404)).toContain('CHALLENGE_NOT_FOUND');
    expect(codes(409)).toEqual(expect.arrayContaining(['CHALLENGE_ALREADY_USED', 'PASSPORT_KEY_UNCHANGED']));
    expect(codes(422)).toEqual(expect.arrayContaining(['INVALID_PASSPORT_PUBLIC_KEY', 'PASSPORT_SIGNATURE_REQUIRED']));
    expect(op.responses['403'].content['application/json'].schema['x-svc-error-codes']).not.toContain('SCOPE_NOT_GRANTED');

    const tool = JSON.parse((await t.request('GET', '/mcp/v1/svc-passport.json')).raw);
    expect(tool.actions).toContainEqual(expect.objectContaining({ action: 'rotate', method: 'POST', path: '/v1/me/passport/rotate', served: true }));
    expect(tool.inputSchema.properties.public_key).toBeDefined();
  });
});
