/**
 * Tool passports over HTTP: register (with a key made by openssl or node:crypto, or none), rotate,
 * revoke, the public passport (did:svc:tool:<id>, never private material), a signature by the tool's
 * key checked against the published key, every error code, security (no key, scoped key and session
 * on root routes, another agent's tool), the log entries and parity.
 */
import { createPublicKey, sign, verify } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generateEd25519 } from '../src/lib/ed25519';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';
import { opensslKeypair, signWithNode, signWithOpenssl } from './helpers/signed-requests';

const ADMIN = { 'x-admin-key': 'test-admin-key' };
const UNKNOWN = '00000000-0000-4000-8000-000000000000';
let t: TestApp;
let a: RegisteredAgent;

const register = (token: string, body: unknown) => t.request('POST', '/v1/me/tools', { token, body });
const codeOf = (r: { status: number; body: any }) => [r.status, r.body?.error_code];
const tool = (over: Record<string, unknown> = {}) => ({ name: 'pdf.summarise', description: 'Summarises PDF files', risk_class: 'low', ...over });
let n = 0;
const named = (over: Record<string, unknown> = {}) => tool({ name: `tool_${++n}`, ...over });

beforeAll(async () => {
  t = await startTestApp();
  a = await t.registerAgent();
});
afterAll(async () => t?.close());

describe('tool passports', () => {
  test('register with an openssl key: 201, the public passport names the tool, its owner and key, with the declared fields flagged unverified', async () => {
    const keys = opensslKeypair();
    const r = await register(a.apiKey, tool({
      public_key: keys.publicKeyPem, risk_class: 'high', model_provenance_hash: `sha256:${'ab'.repeat(32)}`, model_provenance_label: 'llama-3.1-8b-instruct',
    }));
    expect(r.status).toBe(201);
    const p = r.body.passport;
    expect(p).toMatchObject({
      did: `did:svc:tool:${p.tool_id}`, name: 'pdf.summarise', description: 'Summarises PDF files', owner: { agent_id: a.agentId, did: `did:svc:${a.agentId}` },
      key_algorithm: 'ed25519', key_version: 1, risk_class: 'high', status: 'active', revoked_at: null,
      model_provenance: { hash: `sha256:${'ab'.repeat(32)}`, label: 'llama-3.1-8b-instruct', verified: false },
    });
    expect(p.risk_class_notice).toMatch(/not verify/);
    expect(p.model_provenance.notice).toMatch(/not verify/);
    const pub = await t.request('GET', `/v1/tools/${p.tool_id}/passport`);
    expect(pub.status).toBe(200);
    expect(pub.body.passport).toEqual(p);
    expect(pub.raw).not.toMatch(/PRIVATE KEY/);
    // The published key verifies what the tool signs (with openssl).
    const message = 'tool output #1';
    const signature = signWithOpenssl(keys.privateKeyPem, message);
    expect(verify(null, Buffer.from(message), createPublicKey(pub.body.passport.public_key), Buffer.from(signature, 'base64'))).toBe(true);
    // And openssl verifies a node:crypto signature against the published PEM.
    const dir = mkdtempSync(join(tmpdir(), 'svc-tool-'));
    try {
      writeFileSync(join(dir, 'pub.pem'), pub.body.passport.public_key);
      writeFileSync(join(dir, 'msg'), message);
      writeFileSync(join(dir, 'sig'), Buffer.from(signWithNode(keys.privateKeyPem, message), 'base64'));
      const out = execFileSync('openssl', ['pkeyutl', '-verify', '-rawin', '-pubin', '-inkey', join(dir, 'pub.pem'), '-sigfile', join(dir, 'sig'), '-in', join(dir, 'msg')], { encoding: 'utf8' });
      expect(out).toMatch(/Signature Verified Successfully/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const e = (await t.request('GET', `/v1/trust/log/entries?start=${p.log_indexes.registered}&end=${p.log_indexes.registered + 1}`)).body.entries[0].entry;
    expect(e).toMatchObject({ kind: 'tool.registered', agent_id: a.agentId, data: { tool_id: p.tool_id, name: 'pdf.summarise', risk_class: 'high' } });
    expect(Buffer.from(e.data.public_key, 'base64')).toHaveLength(32);
  });

  test('a key given as base64 of the raw 32 bytes; no key at all; provenance left out', async () => {
    const raw = createPublicKey(generateEd25519().publicKeyPem).export({ format: 'der', type: 'spki' }).subarray(12).toString('base64');
    const r = await register(a.apiKey, named({ public_key: raw }));
    expect(r.status).toBe(201);
    expect(createPublicKey(r.body.passport.public_key).export({ format: 'der', type: 'spki' }).subarray(12).toString('base64')).toBe(raw);
    const none = await register(a.apiKey, named());
    expect(none.body.passport).toMatchObject({ public_key: null, public_key_sha256: null, key_algorithm: null, model_provenance: null });
  });

  test('rotate: a new key and key_version 2, the log names the previous key; revoke: revoked on the public read, then 409 for both', async () => {
    const first = generateEd25519();
    const created = (await register(a.apiKey, named({ public_key: first.publicKeyPem }))).body.passport;
    const second = generateEd25519();
    t.clock.advance(1000);
    const rotated = await t.request('POST', `/v1/me/tools/${created.tool_id}/rotate`, { token: a.apiKey, body: { public_key: second.publicKeyPem } });
    expect(rotated.status).toBe(200);
    expect(rotated.body.passport).toMatchObject({ key_version: 2, public_key: second.publicKeyPem, rotated_at: new Date(t.clock.now()).toISOString() });
    const e = (await t.request('GET', `/v1/trust/log/entries?start=${rotated.body.passport.log_indexes.rotated}&end=${rotated.body.passport.log_indexes.rotated + 1}`)).body.entries[0].entry;
    expect(e).toMatchObject({ kind: 'tool.rotated', data: { tool_id: created.tool_id, key_version: 2, previous_public_key_sha256: created.public_key_sha256 } });
    // A signature by the old key no longer verifies against the published key.
    const old = sign(null, Buffer.from('m'), first.privateKeyPem);
    const published = (await t.request('GET', `/v1/tools/${created.tool_id}/passport`)).body.passport.public_key;
    expect(verify(null, Buffer.from('m'), createPublicKey(published), old)).toBe(false);
    // Rotating to the current key is no rotation.
    expect(codeOf(await t.request('POST', `/v1/me/tools/${created.tool_id}/rotate`, { token: a.apiKey, body: { public_key: second.publicKeyPem } }))).toEqual([422, 'INVALID_TOOL_PUBLIC_KEY']);

    const revoked = await t.request('POST', `/v1/me/tools/${created.tool_id}/revoke`, { token: a.apiKey });
    expect(revoked.body.passport).toMatchObject({ status: 'revoked', revoked_at: new Date(t.clock.now()).toISOString() });
    expect((await t.request('GET', `/v1/tools/${created.tool_id}/passport`)).body.passport.status).toBe('revoked');
    expect(codeOf(await t.request('POST', `/v1/me/tools/${created.tool_id}/revoke`, { token: a.apiKey }))).toEqual([409, 'TOOL_PASSPORT_REVOKED']);
    expect(codeOf(await t.request('POST', `/v1/me/tools/${created.tool_id}/rotate`, { token: a.apiKey, body: { public_key: generateEd25519().publicKeyPem } }))).toEqual([409, 'TOOL_PASSPORT_REVOKED']);
  });

  test('409 TOOL_PASSPORT_NAME_TAKEN among active tools (free again once revoked); another agent may use the name', async () => {
    const name = `dup_${++n}`;
    const first = await register(a.apiKey, tool({ name }));
    expect(codeOf(await register(a.apiKey, tool({ name })))).toEqual([409, 'TOOL_PASSPORT_NAME_TAKEN']);
    const b = await t.registerAgent();
    expect((await register(b.apiKey, tool({ name }))).status).toBe(201);
    await t.request('POST', `/v1/me/tools/${first.body.passport.tool_id}/revoke`, { token: a.apiKey });
    expect((await register(a.apiKey, tool({ name }))).status).toBe(201);
  });

  test('409 TOOL_PASSPORT_LIMIT_REACHED at 100 active tools', async () => {
    const c = await t.registerAgent();
    for (let i = 0; i < 100; i++) expect((await register(c.apiKey, tool({ name: `t${i}` }))).status).toBe(201);
    const over = await register(c.apiKey, tool({ name: 't100' }));
    expect([...codeOf(over), over.body.max_active_tools]).toEqual([409, 'TOOL_PASSPORT_LIMIT_REACHED', 100]);
  });

  test('422: a private key or a bad key is INVALID_TOOL_PUBLIC_KEY; bad fields are VALIDATION_FAILED naming them', async () => {
    const pair = generateEd25519();
    for (const public_key of [pair.privateKeyPem, 'not a key', Buffer.alloc(31).toString('base64'), Buffer.alloc(32).toString('base64'), 12]) {
      const r = await register(a.apiKey, named({ public_key }));
      expect(codeOf(r), String(public_key).slice(0, 30)).toEqual([422, 'INVALID_TOOL_PUBLIC_KEY']);
      expect(r.raw).not.toContain('PRIVATE KEY-----\nMC4');
    }
    const fields: [string, Record<string, unknown>][] = [
      ['body.name', { name: undefined }], ['body.name', { name: 'has space' }], ['body.name', { name: 'x'.repeat(65) }],
      ['body.description', { description: undefined }], ['body.description', { description: '' }], ['body.description', { description: '   ' }], ['body.description', { description: 'd'.repeat(501) }],
      ['body.risk_class', { risk_class: 'medium' }], ['body.risk_class', { risk_class: undefined }],
      ['body.model_provenance_hash', { model_provenance_hash: 'md5' }], ['body.model_provenance_label', { model_provenance_label: 'l'.repeat(201) }],
    ];
    for (const [field, over] of fields) {
      const r = await register(a.apiKey, named(over));
      expect([...codeOf(r), r.body.field], JSON.stringify(over).slice(0, 60)).toEqual([422, 'VALIDATION_FAILED', field]);
    }
    const created = (await register(a.apiKey, named())).body.passport;
    expect(codeOf(await t.request('POST', `/v1/me/tools/${created.tool_id}/rotate`, { token: a.apiKey, body: {} }))).toEqual([422, 'INVALID_TOOL_PUBLIC_KEY']);
    expect(codeOf(await t.request('POST', `/v1/me/tools/${created.tool_id}/rotate`, { token: a.apiKey, body: { public_key: 'nope' } }))).toEqual([422, 'INVALID_TOOL_PUBLIC_KEY']);
  });
});

describe('tool passports: security', () => {
  test('no key or a wrong key 401; a scoped key or session on the root routes 403 ROOT_KEY_REQUIRED', async () => {
    const created = (await register(a.apiKey, named())).body.passport;
    const scoped = (await t.request('POST', '/v1/me/keys', { token: a.apiKey, body: { scopes: ['svc:memory', 'svc:search', 'svc:browse', 'svc:blob-store', 'svc:commons-read', 'svc:commons-publish'] } })).body.api_key;
    const c = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
    const session = (await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: a.agentId, challenge_id: c.challenge_id, signature: signWithNode(a.privateKeyPem, c.sign_payload) } })).body.session_token;
    const calls = [
      ['POST', '/v1/me/tools', named()], ['POST', `/v1/me/tools/${created.tool_id}/rotate`, { public_key: generateEd25519().publicKeyPem }],
      ['POST', `/v1/me/tools/${created.tool_id}/revoke`, undefined],
    ] as const;
    for (const [method, path, body] of calls) {
      for (const headers of [{}, { authorization: 'Bearer svc_nope' }] as Record<string, string>[]) expect(codeOf(await t.request(method, path, { headers, body })), path).toEqual([401, 'INVALID_API_KEY']);
      for (const token of [scoped, session]) expect(codeOf(await t.request(method, path, { token, body })), path).toEqual([403, 'ROOT_KEY_REQUIRED']);
    }
    expect((await t.request('GET', `/v1/tools/${created.tool_id}/passport`)).body.passport.status).toBe('active');
  });

  test("another agent's tool, an unknown or malformed id: 404 TOOL_PASSPORT_NOT_FOUND; the tool is untouched", async () => {
    const created = (await register(a.apiKey, named({ public_key: generateEd25519().publicKeyPem }))).body.passport;
    const b = await t.registerAgent();
    expect(codeOf(await t.request('POST', `/v1/me/tools/${created.tool_id}/rotate`, { token: b.apiKey, body: { public_key: generateEd25519().publicKeyPem } }))).toEqual([404, 'TOOL_PASSPORT_NOT_FOUND']);
    expect(codeOf(await t.request('POST', `/v1/me/tools/${created.tool_id}/revoke`, { token: b.apiKey }))).toEqual([404, 'TOOL_PASSPORT_NOT_FOUND']);
    for (const id of [UNKNOWN, 'not-a-uuid']) {
      expect(codeOf(await t.request('GET', `/v1/tools/${id}/passport`))).toEqual([404, 'TOOL_PASSPORT_NOT_FOUND']);
      expect(codeOf(await t.request('POST', `/v1/me/tools/${id}/revoke`, { token: a.apiKey }))).toEqual([404, 'TOOL_PASSPORT_NOT_FOUND']);
    }
    expect((await t.request('GET', `/v1/tools/${created.tool_id}/passport`)).body.passport).toEqual(created);
  });

  test('parity: tool passports replay to their rows; a risk class changed behind svc\'s back is reported', async () => {
    const created = (await register(a.apiKey, named({ public_key: generateEd25519().publicKeyPem }))).body.passport;
    await t.request('POST', `/v1/me/tools/${created.tool_id}/rotate`, { token: a.apiKey, body: { public_key: generateEd25519().publicKeyPem } });
    expect((await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN })).body.ok).toBe(true);
    await t.database.db.updateTable('tool_passports').set({ risk_class: 'high' }).where('tool_id', '=', created.tool_id).execute();
    const bad = await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN });
    expect(bad.body.mismatches).toEqual(expect.arrayContaining([expect.objectContaining({ projection: 'tool_passports', key: created.tool_id, field: 'risk_class', expected: 'low', stored: 'high' })]));
    await t.database.db.updateTable('tool_passports').set({ risk_class: 'low' }).where('tool_id', '=', created.tool_id).execute();
    expect((await t.request('GET', '/admin/trust/adoption', { headers: ADMIN })).body.declarations.tool_passports_active).toBeGreaterThan(0);
  });
});
