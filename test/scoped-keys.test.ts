/**
 * Scoped API keys: POST/GET/DELETE /v1/me/keys (root key only), what a scoped key may call (the
 * route's declared scope, checked by the one auth hook), revocation and expiry taking effect at once
 * (the token cache on), the trust log entries and their parity, and the passport's verified
 * capabilities.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { signEd25519 } from '../src/lib/ed25519';
import { MAX_ACTIVE_SCOPED_KEYS } from '../src/modules/identity/service';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

let t: TestApp;
let a: RegisteredAgent;
let b: RegisteredAgent;
const ADMIN = { 'x-admin-key': 'test-admin-key' };

beforeAll(async () => {
  t = await startTestApp({ env: { SVC_AUTH_CACHE_MS: '60000' } });
  a = await t.registerAgent();
  b = await t.registerAgent();
});
afterAll(async () => t?.close());

const create = (body: unknown, token = a.apiKey) => t.request('POST', '/v1/me/keys', { token, body });
const list = (token = a.apiKey) => t.request('GET', '/v1/me/keys', { token });
const revoke = (keyId: string, token = a.apiKey) => t.request('DELETE', `/v1/me/keys/${keyId}`, { token });
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function newKey(scopes: string[], extra: Record<string, unknown> = {}, owner = a) {
  const res = await create({ scopes, ...extra }, owner.apiKey);
  expect(res.status, res.raw).toBe(201);
  return res.body as { api_key: string; key_id: string; scopes: string[]; label: string | null; expires_at: string | null };
}

async function session(agent: RegisteredAgent): Promise<string> {
  const c = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: agent.agentId } })).body;
  const v = await t.request('POST', '/v1/auth/passport/verify', {
    body: { agent_id: agent.agentId, challenge_id: c.challenge_id, signature: signEd25519(agent.privateKeyPem, Buffer.from(c.sign_payload)) },
  });
  return v.body.session_token as string;
}

describe('POST /v1/me/keys', () => {
  test('201: the key once (no-store), its key_id, scopes, label and expiry; only the SHA-256 is stored', async () => {
    const res = await create({ scopes: ['svc:memory', 'svc:search'], label: 'ci runner', expires_in: 3600 });
    expect(res.status).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toMatchObject({
      status: 'success', kind: 'scoped', scopes: ['svc:memory', 'svc:search'], label: 'ci runner',
      created_at: new Date(t.clock.now()).toISOString(), expires_at: new Date(t.clock.now() + 3600_000).toISOString(),
    });
    expect(res.body.api_key).toMatch(/^svc_/);
    expect(res.body.key_id).toMatch(UUID);
    const rows = await t.database.db.selectFrom('api_keys').selectAll().where('agent_id', '=', a.agentId).where('kind', '=', 'scoped').execute();
    const row = rows.find((r) => r.key_id === res.body.key_id)!;
    expect(row.key_hash).toBe(sha256(res.body.api_key));
    expect(JSON.stringify(rows)).not.toContain(res.body.api_key);
    expect(row.key_id).not.toBe(row.key_hash);
  });

  test('no label and no expiry: label null, expires_at null; a label of spaces is no label', async () => {
    const k = await newKey(['svc:browse']);
    expect(k).toMatchObject({ label: null, expires_at: null });
    expect((await newKey(['svc:browse'], { label: '   ' })).label).toBeNull();
  });

  test.each([
    [{}, 'INVALID_KEY_SCOPES'],
    [{ scopes: [] }, 'INVALID_KEY_SCOPES'],
    [{ scopes: ['svc:everything'] }, 'INVALID_KEY_SCOPES'],
    [{ scopes: ['svc:memory', 'svc:memory'] }, 'INVALID_KEY_SCOPES'],
    [{ scopes: 'svc:memory' }, 'INVALID_KEY_SCOPES'],
    [{ scopes: ['svc:memory'], label: 'x'.repeat(101) }, 'INVALID_KEY_LABEL'],
    [{ scopes: ['svc:memory'], label: '' }, 'INVALID_KEY_LABEL'],
    [{ scopes: ['svc:memory'], label: 'tab\there' }, 'INVALID_KEY_LABEL'],
    [{ scopes: ['svc:memory'], expires_in: 59 }, 'INVALID_KEY_EXPIRY'],
    [{ scopes: ['svc:memory'], expires_in: 31_536_001 }, 'INVALID_KEY_EXPIRY'],
    [{ scopes: ['svc:memory'], expires_in: 90.5 }, 'INVALID_KEY_EXPIRY'],
    [{ scopes: ['svc:memory'], expires_in: '3600' }, 'INVALID_KEY_EXPIRY'],
  ])('422 %j -> %s', async (body, code) => {
    const res = await create(body);
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe(code);
  });

  test('bounds are inclusive: 100-character label, expires_in 60 and 31536000', async () => {
    expect((await create({ scopes: ['svc:memory'], label: 'x'.repeat(100), expires_in: 60 })).status).toBe(201);
    expect((await create({ scopes: ['svc:memory'], expires_in: 31_536_000 })).status).toBe(201);
  });

  test(`409 API_KEY_LIMIT_REACHED past ${MAX_ACTIVE_SCOPED_KEYS} active keys; revoked and expired keys do not count`, async () => {
    const c = await t.registerAgent();
    const short = await newKey(['svc:memory'], { expires_in: 60 }, c);
    const made: string[] = [];
    for (let i = 1; i < MAX_ACTIVE_SCOPED_KEYS; i++) made.push((await newKey(['svc:memory'], {}, c)).key_id);
    const over = await create({ scopes: ['svc:memory'] }, c.apiKey);
    expect(over.status).toBe(409);
    expect(over.body).toMatchObject({ error_code: 'API_KEY_LIMIT_REACHED', max_active_scoped_keys: MAX_ACTIVE_SCOPED_KEYS });
    // The refused key was not stored (nor logged).
    expect((await list(c.apiKey)).body.keys).toHaveLength(MAX_ACTIVE_SCOPED_KEYS);
    t.clock.advanceSeconds(61); // the short one expires
    expect((await create({ scopes: ['svc:memory'] }, c.apiKey)).status).toBe(201);
    expect((await create({ scopes: ['svc:memory'] }, c.apiKey)).status).toBe(409);
    expect((await revoke(made[0], c.apiKey)).status).toBe(204);
    expect((await create({ scopes: ['svc:memory'] }, c.apiKey)).status).toBe(201);
    expect(short.key_id).toMatch(UUID);
  });
});

describe('GET /v1/me/keys', () => {
  test('lists the agent\'s scoped keys newest first, without secrets; active, revoked and expired', async () => {
    const c = await t.registerAgent();
    const k1 = await newKey(['svc:memory'], { label: 'one' }, c);
    t.clock.advanceSeconds(1);
    const k2 = await newKey(['svc:search', 'svc:browse'], { expires_in: 60 }, c);
    t.clock.advanceSeconds(1);
    const k3 = await newKey(['svc:blob-store'], {}, c);
    expect((await revoke(k3.key_id, c.apiKey)).status).toBe(204);
    t.clock.advanceSeconds(60);
    const res = await list(c.apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', active_count: 1, max_active: MAX_ACTIVE_SCOPED_KEYS });
    expect(res.body.keys.map((k: any) => k.key_id)).toEqual([k3.key_id, k2.key_id, k1.key_id]);
    expect(res.body.keys[0]).toMatchObject({ scopes: ['svc:blob-store'], active: false, revoked_at: expect.any(String) });
    expect(res.body.keys[1]).toMatchObject({ scopes: ['svc:search', 'svc:browse'], active: false, revoked_at: null, expires_at: expect.any(String) });
    expect(res.body.keys[2]).toEqual({
      key_id: k1.key_id, scopes: ['svc:memory'], label: 'one', created_at: expect.any(String), expires_at: null, revoked_at: null, active: true,
    });
    for (const k of [k1, k2, k3]) {
      expect(res.raw).not.toContain(k.api_key);
      expect(res.raw).not.toContain(sha256(k.api_key));
    }
  });

  test('an agent without scoped keys gets an empty list; another agent\'s keys never appear', async () => {
    const c = await t.registerAgent();
    await newKey(['svc:memory'], {}, b);
    const res = await list(c.apiKey);
    expect(res.body).toMatchObject({ keys: [], active_count: 0 });
  });
});

describe('DELETE /v1/me/keys/{key_id}', () => {
  test('204; the key stops working at once although the token cache is on; a second delete is 204 and changes nothing', async () => {
    const k = await newKey(['svc:memory']);
    expect((await t.request('GET', '/v1/me', { token: k.api_key })).status).toBe(200); // cached now
    const res = await revoke(k.key_id);
    expect(res.status).toBe(204);
    expect(res.raw).toBe('');
    const after = await t.request('GET', '/v1/me', { token: k.api_key });
    expect(after.status).toBe(401);
    expect(after.body.error_code).toBe('INVALID_API_KEY');
    const size = (await t.request('GET', '/v1/trust/log/entries?start=0&end=1')).body.tree_size;
    expect((await revoke(k.key_id)).status).toBe(204);
    expect((await t.request('GET', '/v1/trust/log/entries?start=0&end=1')).body.tree_size).toBe(size);
  });

  test('404 API_KEY_NOT_FOUND: unknown id, not a UUID, another agent\'s key (which keeps working)', async () => {
    const theirs = await newKey(['svc:memory'], {}, b);
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-key', theirs.key_id]) {
      const res = await revoke(id);
      expect(res.status, id).toBe(404);
      expect(res.body.error_code).toBe('API_KEY_NOT_FOUND');
    }
    expect((await t.request('GET', '/v1/me', { token: theirs.api_key })).status).toBe(200);
    // The digest is not an id either.
    expect((await revoke(sha256(theirs.api_key))).status).toBe(404);
  });
});

describe('who may manage keys', () => {
  const routes = () => [
    ['POST', '/v1/me/keys', { scopes: ['svc:memory'] }],
    ['GET', '/v1/me/keys', undefined],
    ['DELETE', '/v1/me/keys/00000000-0000-4000-8000-000000000000', undefined],
  ] as const;

  test('no key, a malformed header or a wrong key: 401 INVALID_API_KEY', async () => {
    for (const [method, path, body] of routes()) {
      for (const headers of [{}, { authorization: 'Basic x' }, { authorization: 'Bearer svc_wrong-000000000000000000000000000000' }] as Record<string, string>[]) {
        const res = await t.request(method, path, { headers, ...(body ? { body } : {}) });
        expect(res.status, `${method} ${path}`).toBe(401);
        expect(res.body.error_code).toBe('INVALID_API_KEY');
      }
    }
  });

  test('a scoped key (even one holding every scope) or a session token: 403 ROOT_KEY_REQUIRED', async () => {
    const all = await newKey(['svc:search', 'svc:memory', 'svc:browse', 'svc:commons-publish', 'svc:commons-read', 'svc:blob-store']);
    const s = await session(a);
    for (const token of [all.api_key, s]) {
      for (const [method, path, body] of routes()) {
        const res = await t.request(method, path, { token, ...(body ? { body } : {}) });
        expect(res.status, `${method} ${path}`).toBe(403);
        expect(res.body.error_code).toBe('ROOT_KEY_REQUIRED');
      }
    }
  });
});

describe('what a scoped key may call', () => {
  test('outside its scopes: 403 SCOPE_NOT_GRANTED naming the scope needed', async () => {
    const k = await newKey(['svc:memory']);
    const cases: [string, string, unknown, string | null][] = [
      ['GET', '/v1/search?q=svc', undefined, 'svc:search'],
      ['POST', '/v1/browse', { url: 'https://example.com/' }, 'svc:browse'],
      ['GET', '/v1/blobs', undefined, 'svc:blob-store'],
      ['GET', '/v1/blobs/search?q=x', undefined, 'svc:blob-store'],
      ['GET', '/v1/commons/entries', undefined, 'svc:commons-read'],
      ['POST', '/v1/commons/entries', { key: 'k', value: 1 }, 'svc:commons-publish'],
      // Closed to scoped keys: money and the trust layer.
      ['POST', '/v1/billing/credits/checkout', { credits: 1000 }, null],
      ['POST', '/v1/feedback/interaction', { subject_agent_id: b.agentId, ref_type: 'task', ref_id: 'x', outcome: 'approved', category: 'accuracy' }, null],
      ['POST', '/v1/agents/passport/description', { bio: 'x' }, null],
    ];
    for (const [method, path, body, scope] of cases) {
      const res = await t.request(method as 'GET', path, { token: k.api_key, ...(body ? { body } : {}) });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body).toMatchObject({ error_code: 'SCOPE_NOT_GRANTED', required_scope: scope, key_scopes: ['svc:memory'] });
    }
    // Nothing was done: no interaction, no description.
    expect((await t.request('GET', `/v1/agents/${a.agentId}/passport`)).body.passport.bio).toBeNull();
  });

  test('inside its scopes, and on routes open to every key: 2xx, done as the agent', async () => {
    const k = await newKey(['svc:memory', 'svc:commons-read', 'svc:blob-store']);
    const put = await t.request('PUT', '/v1/memory/scoped.k', { token: k.api_key, body: { value: { x: 1 } } });
    expect(put.status).toBe(200);
    const read = await t.request('GET', '/v1/memory/scoped.k', { token: a.apiKey });
    expect(read.body.value).toEqual({ x: 1 });
    expect((await t.request('GET', '/v1/memory/scoped.k', { token: k.api_key })).status).toBe(200);
    expect((await t.request('GET', '/v1/commons/entries', { token: k.api_key })).status).toBe(200);
    expect((await t.request('GET', '/v1/blobs', { token: k.api_key })).status).toBe(200);
    expect((await t.request('GET', '/v1/usage', { token: k.api_key })).status).toBe(200);
    expect((await t.request('GET', '/v1/capabilities', { token: k.api_key })).status).toBe(200);
    const me = await t.request('GET', '/v1/me', { token: k.api_key });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ agent_id: a.agentId, authenticated_with: { kind: 'scoped', scopes: ['svc:memory', 'svc:commons-read', 'svc:blob-store'] } });
  });

  test('the root key and a session token are not limited by scopes', async () => {
    const s = await session(a);
    for (const token of [a.apiKey, s]) {
      expect((await t.request('GET', '/v1/commons/entries', { token })).status).toBe(200);
      expect((await t.request('GET', '/v1/blobs', { token })).status).toBe(200);
    }
  });

  test('an expired key: 401 INVALID_API_KEY from the moment it expires (injected clock), token cache on', async () => {
    const k = await newKey(['svc:memory'], { expires_in: 120 });
    expect((await t.request('GET', '/v1/memory', { token: k.api_key })).status).toBe(200);
    t.clock.advanceSeconds(119);
    expect((await t.request('GET', '/v1/memory', { token: k.api_key })).status).toBe(200);
    t.clock.advanceSeconds(1);
    const res = await t.request('GET', '/v1/memory', { token: k.api_key });
    expect(res.status).toBe(401);
    expect(res.body.error_code).toBe('INVALID_API_KEY');
    const listed = (await list()).body.keys.find((x: any) => x.key_id === k.key_id);
    expect(listed).toMatchObject({ active: false, revoked_at: null });
  });

  test('an MCP tool call with a scoped key goes through the same check', async () => {
    const k = await newKey(['svc:search']);
    const call = async (name: string, args: Record<string, unknown>) => {
      const res = await t.request('POST', '/mcp', {
        token: k.api_key,
        headers: { accept: 'application/json, text/event-stream' },
        body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
      });
      expect(res.status).toBe(200);
      return res.body.result as { isError: boolean; content: { text: string }[] };
    };
    const denied = await call('svc_memory', { action: 'get', key: 'scoped.k' });
    expect(denied.isError).toBe(true);
    expect(denied.content[0].text).toContain('SCOPE_NOT_GRANTED');
  });
});

describe('trust log, parity and the passport', () => {
  test('key.created and key.revoked entries carry key_id, scopes, label and expiry, never the key', async () => {
    const before = (await t.request('GET', '/v1/trust/log/entries?start=0&end=1')).body.tree_size as number;
    const k = await newKey(['svc:browse'], { label: 'logged', expires_in: 600 });
    expect((await revoke(k.key_id)).status).toBe(204);
    const res = await t.request('GET', `/v1/trust/log/entries?start=${before}&end=${before + 2}`);
    const [created, revoked] = res.body.entries.map((e: any) => e.entry);
    expect(created).toMatchObject({
      kind: 'key.created', agent_id: a.agentId, epoch: 1,
      data: { key_id: k.key_id, scopes: ['svc:browse'], label: 'logged', expires_at: k.expires_at },
    });
    expect(revoked).toMatchObject({ kind: 'key.revoked', agent_id: a.agentId, data: { key_id: k.key_id, scopes: ['svc:browse'] } });
    expect(res.raw).not.toContain(k.api_key);
    expect(res.raw).not.toContain(sha256(k.api_key));
  });

  test('parity: the log replays to the stored keys; a key row changed behind the service\'s back is reported', async () => {
    const k = await newKey(['svc:memory'], { label: 'parity' });
    const ok = await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN });
    expect(ok.body.mismatches.filter((m: any) => m.projection === 'api_keys')).toEqual([]);
    await t.database.db.updateTable('api_keys').set({ scopes: JSON.stringify(['svc:memory', 'svc:commons-publish']) }).where('key_id', '=', k.key_id).execute();
    const bad = await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN });
    expect(bad.body.mismatches).toContainEqual(expect.objectContaining({ projection: 'api_keys', key: k.key_id, field: 'scopes' }));
    await t.database.db.updateTable('api_keys').set({ scopes: JSON.stringify(['svc:memory']) }).where('key_id', '=', k.key_id).execute();
    expect((await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN })).body.ok).toBe(true);
  });

  test('capabilities.verified = active sub-keys\' scopes plus tier rules', async () => {
    const c = await t.registerAgent();
    const passport = async () => (await t.request('GET', `/v1/agents/${c.agentId}/passport`)).body.passport;
    // Free tier: every capability but commons-publish.
    expect((await passport()).capabilities.verified).not.toContain('svc:commons-publish');
    const k = await newKey(['svc:commons-publish'], {}, c);
    expect((await passport()).capabilities.verified).toContain('svc:commons-publish');
    expect((await t.request('GET', '/v1/me', { token: c.apiKey })).body.verified_capabilities).toContain('svc:commons-publish');
    expect((await revoke(k.key_id, c.apiKey)).status).toBe(204);
    expect((await passport()).capabilities.verified).not.toContain('svc:commons-publish');
  });

  test('adoption counts active scoped keys', async () => {
    const res = await t.request('GET', '/admin/trust/adoption', { headers: ADMIN });
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body)).toContain('scoped_keys_active');
  });
});

describe('discovery states what a scoped key needs', () => {
  test('OpenAPI: x-svc-scope per operation and 403 SCOPE_NOT_GRANTED where a scoped key can be refused', async () => {
    const doc = (await t.request('GET', '/openapi.json')).body;
    const op = (path: string, method: string) => doc.paths[path][method];
    expect(op('/v1/memory/{key}', 'put')['x-svc-scope']).toBe('svc:memory');
    expect(op('/v1/commons/entries', 'get')['x-svc-scope']).toBe('svc:commons-read');
    expect(op('/v1/commons/entries', 'post')['x-svc-scope']).toBe('svc:commons-publish');
    expect(op('/v1/me', 'get')['x-svc-scope']).toBe('any');
    expect(op('/v1/me/keys', 'post')['x-svc-scope']).toBeNull();
    expect(op('/v1/billing/credits/checkout', 'post')['x-svc-scope']).toBeNull();
    expect(op('/v1/register', 'post')['x-svc-scope']).toBeUndefined();
    const codes403 = (path: string, method: string) => JSON.stringify(op(path, method).responses['403'] ?? {});
    expect(codes403('/v1/memory/{key}', 'put')).toContain('SCOPE_NOT_GRANTED');
    expect(codes403('/v1/me/keys', 'post')).toContain('ROOT_KEY_REQUIRED');
    expect(codes403('/v1/me', 'get')).not.toContain('SCOPE_NOT_GRANTED');
    expect(Object.keys(op('/v1/me/keys/{key_id}', 'delete').responses)).toEqual(expect.arrayContaining(['204', '401', '403', '404']));
  });

  test('capabilities: endpoints carry their scope; authentication.scoped_keys lists the routes per scope and the codes', async () => {
    const caps = (await t.request('GET', '/v1/capabilities')).body;
    expect(caps.endpoints.find((e: any) => e.path === '/v1/search')).toMatchObject({ auth: 'key', scope: 'svc:search' });
    const sk = caps.authentication.scoped_keys;
    expect(sk).toMatchObject({
      max_active_per_agent: MAX_ACTIVE_SCOPED_KEYS,
      outside_scopes: { status: 403, error_code: 'SCOPE_NOT_GRANTED' },
      limit_error: { status: 409, error_code: 'API_KEY_LIMIT_REACHED' },
      manage: { create: 'POST /v1/me/keys', list: 'GET /v1/me/keys', revoke: 'DELETE /v1/me/keys/{key_id}' },
    });
    expect(sk.endpoints_by_scope['svc:blob-store']).toEqual(expect.arrayContaining(['PUT /v1/blobs', 'POST /v1/blobs/{blob_id}/parse', 'GET /v1/blobs/search']));
    expect(sk.any_key_endpoints).toContain('GET /v1/me');
    expect(sk.refused_endpoints).toEqual(expect.arrayContaining(['POST /v1/me/keys', 'POST /v1/billing/credits/checkout']));
    expect(caps.authentication.root_key_required.endpoints).toEqual(expect.arrayContaining(['POST /v1/me/keys', 'GET /v1/me/keys', 'DELETE /v1/me/keys/{key_id}']));
  });

  test('tool files and live MCP tools: the scope of each action', async () => {
    const memory = (await t.request('GET', '/mcp/v1/svc-memory.json')).body;
    expect(memory.actions.find((x: any) => x.action === 'put')).toMatchObject({ scope: 'svc:memory' });
    const res = await t.request('POST', '/mcp', {
      token: a.apiKey, headers: { accept: 'application/json, text/event-stream' }, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    const tools = res.body.result.tools as { name: string; _meta: Record<string, Record<string, string | null>> }[];
    expect(tools.find((x) => x.name === 'svc_memory')!._meta['svc/scopes']).toMatchObject({ put: 'svc:memory', search: 'svc:memory' });
    expect(tools.find((x) => x.name === 'svc_passport')!._meta['svc/scopes']).toMatchObject({ me: 'any', describe: null });
  });
});

describe('the cap under concurrent creation', () => {
  test(`concurrent creations never leave more than ${MAX_ACTIVE_SCOPED_KEYS} active keys`, async () => {
    const c = await t.registerAgent();
    for (let i = 0; i < MAX_ACTIVE_SCOPED_KEYS - 3; i++) await newKey(['svc:memory'], {}, c);
    const results = await Promise.all(Array.from({ length: 8 }, () => create({ scopes: ['svc:memory'] }, c.apiKey)));
    expect(results.filter((r) => r.status === 201)).toHaveLength(3);
    expect(results.filter((r) => r.status === 409).every((r) => r.body.error_code === 'API_KEY_LIMIT_REACHED')).toBe(true);
    expect((await list(c.apiKey)).body.active_count).toBe(MAX_ACTIVE_SCOPED_KEYS);
    // Only the stored keys were logged: the parity check agrees.
    expect((await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN })).body.ok).toBe(true);
  });
});
