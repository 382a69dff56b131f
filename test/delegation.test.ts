/**
 * Delegation over HTTP: POST /v1/agents/{parent_agent_id}/delegate issues a scoped key limited to a
 * write_set of tools (routes of other tools refused, over HTTP and over MCP), checked against the
 * parent's tool_allow_list binding (POLICY_BINDING_WRITE_SET_EXCEEDED, POLICY_BINDING_CORRUPT), every
 * error code, security, expiry and revocation, the log entries and parity.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';
import { jcs, signedBody, signWithNode } from './helpers/signed-requests';

const ADMIN = { 'x-admin-key': 'test-admin-key' };
let t: TestApp;

const delegate = (token: string, parent: string, body: unknown) => t.request('POST', `/v1/agents/${parent}/delegate`, { token, body });
const codeOf = (r: { status: number; body: any }) => [r.status, r.body?.error_code];
const bind = async (a: RegisteredAgent, tools: string[]) => {
  const r = await t.request('POST', '/v1/me/policy-bindings/amend', {
    token: a.apiKey, body: await signedBody(t, a, 'svc.policy_binding.amend.v1', { binding_type: 'tool_allow_list', params: { allowed_tools: tools } }),
  });
  expect(r.status).toBe(200);
  return r.body.binding;
};
const mcp = (token: string, name: string, args: Record<string, unknown>) => t.request('POST', '/mcp', {
  token, headers: { accept: 'application/json, text/event-stream' },
  body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
});
const mcpResult = (r: { body: any }) => ({ isError: r.body.result?.isError === true, body: JSON.parse(r.body.result?.content?.[0]?.text ?? '{}') });

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('delegation: the key', () => {
  test('201: a scoped key for the write_set, its scopes, expiry and the log entries; it works for its tool only', async () => {
    const a = await t.registerAgent();
    const r = await delegate(a.apiKey, a.agentId, { write_set: ['svc_memory'], label: 'summariser', expires_in: 600 });
    expect(r.status).toBe(201);
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.body).toMatchObject({
      status: 'success', kind: 'scoped', parent_agent_id: a.agentId, write_set: ['svc_memory'], scopes: ['svc:memory'], label: 'summariser',
      expires_at: new Date(t.clock.now() + 600_000).toISOString(), policy_binding_log_index: null,
    });
    expect(r.body.api_key).toMatch(/^svc_/);
    const i = r.body.delegation_log_index;
    const entries = (await t.request('GET', `/v1/trust/log/entries?start=${i - 1}&end=${i + 1}`)).body.entries.map((e: any) => e.entry);
    expect(entries[0]).toMatchObject({ kind: 'key.created', agent_id: a.agentId, data: { key_id: r.body.key_id, scopes: ['svc:memory'] } });
    expect(entries[1]).toMatchObject({ kind: 'delegation.issued', agent_id: a.agentId, data: { key_id: r.body.key_id, write_set: ['svc_memory'], scopes: ['svc:memory'], binding_log_index: null } });
    // Listed with the parent's scoped keys.
    expect((await t.request('GET', '/v1/me/keys', { token: a.apiKey })).body.keys.map((k: any) => k.key_id)).toContain(r.body.key_id);

    const key = r.body.api_key as string;
    expect((await t.request('PUT', '/v1/memory/notes', { token: key, body: { value: { n: 1 } } })).status).toBe(200);
    expect((await t.request('GET', '/v1/memory/notes', { token: key })).status).toBe(200);
    // Another capability: the key lacks its scope.
    expect(codeOf(await t.request('GET', '/v1/search?q=x', { token: key }))).toEqual([403, 'SCOPE_NOT_GRANTED']);
    // The journal needs svc:memory, which the key holds, but it is the svc_trust tool's route.
    const journal = await t.request('POST', '/v1/me/journal/commit', { token: key, body: { commitment_hash: Buffer.alloc(32, 1).toString('base64') } });
    expect(codeOf(journal)).toEqual([403, 'SCOPE_NOT_GRANTED']);
    expect(journal.body).toMatchObject({ required_tools: ['svc_trust'], key_write_set: ['svc_memory'] });
    // A route of no tool follows the scope rules alone (usage: any key of the agent).
    expect((await t.request('GET', '/v1/usage', { token: key })).status).toBe(200);
  });

  test('two tools on one route: the route lets the write_set\'s tool through; MCP refuses the other tool by name', async () => {
    const a = await t.registerAgent();
    const key = (await delegate(a.apiKey, a.agentId, { write_set: ['svc_blob_list'] })).body.api_key as string;
    expect((await t.request('GET', '/v1/blobs', { token: key })).status).toBe(200);
    const upload = await t.request('PUT', '/v1/blobs', { token: key, body: Buffer.from('x'), headers: { 'content-type': 'text/plain' } });
    expect(codeOf(upload)).toEqual([403, 'SCOPE_NOT_GRANTED']);
    expect(upload.body.required_tools).toEqual(['svc_blob', 'svc_blob_upload']);
    const listed = mcpResult(await mcp(key, 'svc_blob_list', {}));
    expect(listed.isError).toBe(false);
    // GET /v1/blobs is also svc_blob's list action: the route allows it, the tool's name does not.
    const viaBlob = mcpResult(await mcp(key, 'svc_blob', { action: 'list' }));
    expect([viaBlob.isError, viaBlob.body.error_code]).toEqual([true, 'SCOPE_NOT_GRANTED']);
    const memory = mcpResult(await mcp(key, 'svc_memory', { action: 'stats' }));
    expect([memory.isError, memory.body.error_code]).toEqual([true, 'SCOPE_NOT_GRANTED']);
  });

  test('a passport session delegates; the key expires with expires_in and stops at once when revoked', async () => {
    const a = await t.registerAgent();
    const c = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
    const session = (await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: a.agentId, challenge_id: c.challenge_id, signature: signWithNode(a.privateKeyPem, c.sign_payload) } })).body.session_token;
    const short = await delegate(session, a.agentId, { write_set: ['svc_memory'], expires_in: 60 });
    expect(short.status).toBe(201);
    expect((await t.request('GET', '/v1/memory/stats', { token: short.body.api_key })).status).toBe(200);
    t.clock.advance(61_000);
    expect(codeOf(await t.request('GET', '/v1/memory/stats', { token: short.body.api_key }))).toEqual([401, 'INVALID_API_KEY']);

    const long = await delegate(a.apiKey, a.agentId, { write_set: ['svc_memory'] });
    expect(long.body.expires_at).toBe(new Date(t.clock.now() + 86_400_000).toISOString());
    expect((await t.request('DELETE', `/v1/me/keys/${long.body.key_id}`, { token: a.apiKey })).status).toBe(204);
    expect(codeOf(await t.request('GET', '/v1/memory/stats', { token: long.body.api_key }))).toEqual([401, 'INVALID_API_KEY']);
  });
});

describe('delegation: the tool allow list', () => {
  test('inside the allow list: 201 naming the binding; outside: 403 POLICY_BINDING_WRITE_SET_EXCEEDED and no key', async () => {
    const a = await t.registerAgent();
    const binding = await bind(a, ['svc_memory', 'svc_search']);
    const ok = await delegate(a.apiKey, a.agentId, { write_set: ['svc_search', 'svc_memory'] });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ policy_binding_log_index: binding.log_index, scopes: ['svc:memory', 'svc:search'] });
    const before = (await t.request('GET', '/v1/me/keys', { token: a.apiKey })).body.keys.length;
    const over = await delegate(a.apiKey, a.agentId, { write_set: ['svc_memory', 'svc_browse'] });
    expect(codeOf(over)).toEqual([403, 'POLICY_BINDING_WRITE_SET_EXCEEDED']);
    expect(over.body).toMatchObject({ exceeded: ['svc_browse'], allowed_tools: ['svc_memory', 'svc_search'], binding_log_index: binding.log_index });
    expect((await t.request('GET', '/v1/me/keys', { token: a.apiKey })).body.keys.length).toBe(before);
    // The binding amended: the same write_set now passes; an empty allow list refuses every delegation.
    await bind(a, ['svc_memory', 'svc_browse']);
    expect((await delegate(a.apiKey, a.agentId, { write_set: ['svc_memory', 'svc_browse'] })).status).toBe(201);
    await bind(a, []);
    expect(codeOf(await delegate(a.apiKey, a.agentId, { write_set: ['svc_memory'] }))).toEqual([403, 'POLICY_BINDING_WRITE_SET_EXCEEDED']);
  });

  test('409 POLICY_BINDING_CORRUPT: a binding that no longer matches its log entry is not used', async () => {
    const a = await t.registerAgent();
    await bind(a, ['svc_memory']);
    await t.database.db.updateTable('policy_bindings').set({ params: jcs({ allowed_tools: ['svc_memory', 'svc_browse'] }) }).where('agent_id', '=', a.agentId).execute();
    expect(codeOf(await delegate(a.apiKey, a.agentId, { write_set: ['svc_browse'] }))).toEqual([409, 'POLICY_BINDING_CORRUPT']);
    expect(codeOf(await delegate(a.apiKey, a.agentId, { write_set: ['svc_memory'] }))).toEqual([409, 'POLICY_BINDING_CORRUPT']);
    await t.database.db.updateTable('policy_bindings').set({ params: jcs({ allowed_tools: ['svc_memory'] }) }).where('agent_id', '=', a.agentId).execute();
    expect((await delegate(a.apiKey, a.agentId, { write_set: ['svc_memory'] })).status).toBe(201);
  });

  test('a binding amended while delegations run: each delegation is judged by the binding committed before it', async () => {
    const a = await t.registerAgent();
    await bind(a, ['svc_memory', 'svc_browse']);
    const narrow = await signedBody(t, a, 'svc.policy_binding.amend.v1', { binding_type: 'tool_allow_list', params: { allowed_tools: ['svc_memory'] } });
    const results = await Promise.all([
      ...Array.from({ length: 4 }, () => delegate(a.apiKey, a.agentId, { write_set: ['svc_browse'] })),
      t.request('POST', '/v1/me/policy-bindings/amend', { token: a.apiKey, body: narrow }),
      ...Array.from({ length: 4 }, () => delegate(a.apiKey, a.agentId, { write_set: ['svc_browse'] })),
    ]);
    const amendIndex = results[4].body.binding.log_index as number;
    for (const r of [...results.slice(0, 4), ...results.slice(5)]) {
      if (r.status === 201) expect(r.body.delegation_log_index).toBeLessThan(amendIndex);
      else expect(codeOf(r)).toEqual([403, 'POLICY_BINDING_WRITE_SET_EXCEEDED']);
    }
  });
});

describe('delegation: refusals and security', () => {
  let a: RegisteredAgent;
  beforeAll(async () => {
    a = await t.registerAgent();
  });

  test('422 DELEGATION_WRITE_SET_INVALID: missing, empty, not a list, unknown tool, a repeat, 33 tools, a tool no delegated key can use', async () => {
    const cases: [string, unknown][] = [
      ['missing', undefined], ['empty', []], ['a string', 'svc_memory'], ['unknown', ['svc_nope']], ['a repeat', ['svc_memory', 'svc_memory']],
      ['33 tools', Array.from({ length: 33 }, (_, i) => `svc_t${i}`)], ['register (public only)', ['svc_register']],
      ['dispute (closed to scoped keys)', ['svc_reputation_dispute']], ['not a string', [1]],
    ];
    for (const [what, write_set] of cases) {
      const r = await delegate(a.apiKey, a.agentId, { write_set });
      expect(codeOf(r), what).toEqual([422, 'DELEGATION_WRITE_SET_INVALID']);
    }
    const r = await delegate(a.apiKey, a.agentId, { write_set: ['svc_nope'] });
    expect(r.body.delegable_tools).toEqual(expect.arrayContaining(['svc_memory', 'svc_search', 'svc_blob_upload']));
    expect(r.body.delegable_tools).not.toContain('svc_register');
  });

  test('label and expiry: 422 INVALID_KEY_LABEL, INVALID_KEY_EXPIRY', async () => {
    expect(codeOf(await delegate(a.apiKey, a.agentId, { write_set: ['svc_memory'], label: 'x'.repeat(101) }))).toEqual([422, 'INVALID_KEY_LABEL']);
    expect(codeOf(await delegate(a.apiKey, a.agentId, { write_set: ['svc_memory'], label: 'a\u0001b' }))).toEqual([422, 'INVALID_KEY_LABEL']);
    for (const expires_in of [59, 31_536_001, 1.5, '600']) {
      expect(codeOf(await delegate(a.apiKey, a.agentId, { write_set: ['svc_memory'], expires_in })), String(expires_in)).toEqual([422, 'INVALID_KEY_EXPIRY']);
    }
  });

  test('403 DELEGATION_FORBIDDEN for another (or no) parent; a scoped or delegated key cannot delegate; no key 401', async () => {
    const b = await t.registerAgent();
    for (const parent of [b.agentId, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      expect(codeOf(await delegate(a.apiKey, parent, { write_set: ['svc_memory'] })), parent).toEqual([403, 'DELEGATION_FORBIDDEN']);
    }
    expect((await delegate(a.apiKey, a.agentId.toUpperCase(), { write_set: ['svc_memory'] })).status).toBe(201);
    const scoped = (await t.request('POST', '/v1/me/keys', { token: a.apiKey, body: { scopes: ['svc:memory'] } })).body.api_key;
    const delegated = (await delegate(a.apiKey, a.agentId, { write_set: ['svc_trust'] })).body.api_key;
    for (const key of [scoped, delegated]) {
      expect(codeOf(await delegate(key, a.agentId, { write_set: ['svc_memory'] }))).toEqual([403, 'SCOPE_NOT_GRANTED']);
    }
    expect(codeOf(await t.request('POST', `/v1/agents/${a.agentId}/delegate`, { body: { write_set: ['svc_memory'] } }))).toEqual([401, 'INVALID_API_KEY']);
    expect(codeOf(await delegate('svc_wrong', a.agentId, { write_set: ['svc_memory'] }))).toEqual([401, 'INVALID_API_KEY']);
  });

  test('409 API_KEY_LIMIT_REACHED: delegated keys count towards the 50 active scoped keys', async () => {
    const c = await t.registerAgent();
    for (let i = 0; i < 50; i++) expect((await t.request('POST', '/v1/me/keys', { token: c.apiKey, body: { scopes: ['svc:search'] } })).status).toBe(201);
    expect(codeOf(await delegate(c.apiKey, c.agentId, { write_set: ['svc_memory'] }))).toEqual([409, 'API_KEY_LIMIT_REACHED']);
  });

  test('parity: delegations replay to their rows and the keys\' write_set; a write_set widened behind svc\'s back is reported', async () => {
    const d = await t.registerAgent();
    const r = await delegate(d.apiKey, d.agentId, { write_set: ['svc_memory'] });
    const clean = await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN });
    expect([clean.body.ok, clean.body.mismatch_count]).toEqual([true, 0]);
    await t.database.db.updateTable('api_keys').set({ tools: JSON.stringify(['svc_memory', 'svc_search']) }).where('key_id', '=', r.body.key_id).execute();
    const bad = await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN });
    expect(bad.body.mismatches).toEqual(expect.arrayContaining([expect.objectContaining({ projection: 'api_keys.tools', key: r.body.key_id, field: 'tools' })]));
    await t.database.db.updateTable('api_keys').set({ tools: JSON.stringify(['svc_memory']) }).where('key_id', '=', r.body.key_id).execute();
    const adoption = await t.request('GET', '/admin/trust/adoption', { headers: ADMIN });
    expect(adoption.body.declarations.delegations_in_window).toBeGreaterThanOrEqual(1);
  });
});
