/**
 * Policy bindings over HTTP: a tool_allow_list amended with a passport signature (node:crypto and
 * openssl), the root and public reads with the binding_type filter, every error code (type, params,
 * signature, forbidden, corrupt), security, a signature replayed onto other params, parity.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';
import { challengeFor, jcs, schemeBytes, signedBody, signWithNode } from './helpers/signed-requests';
import { createHash } from 'node:crypto';

const SCHEME = 'svc.policy_binding.amend.v1';
const ADMIN = { 'x-admin-key': 'test-admin-key' };
const UNKNOWN = '00000000-0000-4000-8000-000000000000';
let t: TestApp;

const allow = (...tools: string[]) => ({ binding_type: 'tool_allow_list', params: { allowed_tools: tools } });
const amend = (a: { apiKey: string }, body: unknown) => t.request('POST', '/v1/me/policy-bindings/amend', { token: a.apiKey, body });
const codeOf = (r: { status: number; body: any }) => [r.status, r.body?.error_code];
const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('policy bindings: amend and read', () => {
  test('none yet: an empty list; the binding_type filter answers 404 POLICY_BINDING_NOT_FOUND', async () => {
    const a = await t.registerAgent();
    const mine = await t.request('GET', '/v1/me/policy-bindings', { token: a.apiKey });
    expect([mine.status, mine.body.bindings]).toEqual([200, []]);
    expect((await t.request('GET', `/v1/agents/${a.agentId}/policy-bindings`)).body.bindings).toEqual([]);
    expect(codeOf(await t.request('GET', '/v1/me/policy-bindings?binding_type=tool_allow_list', { token: a.apiKey }))).toEqual([404, 'POLICY_BINDING_NOT_FOUND']);
    expect(codeOf(await t.request('GET', `/v1/agents/${a.agentId}/policy-bindings?binding_type=tool_allow_list`))).toEqual([404, 'POLICY_BINDING_NOT_FOUND']);
  });

  test('bind (node:crypto) then amend (openssl): versions 1 and 2, the hash of the canonical params, both reads agree, the log records it', async () => {
    const a = await t.registerAgent();
    const first = await amend(a, await signedBody(t, a, SCHEME, allow('svc_memory', 'svc_search')));
    expect(first.status).toBe(200);
    expect(first.body.binding).toMatchObject({
      binding_type: 'tool_allow_list', params: { allowed_tools: ['svc_memory', 'svc_search'] }, version: 1,
      params_sha256: sha256('{"allowed_tools":["svc_memory","svc_search"]}'), bound_at: new Date(t.clock.now()).toISOString(),
    });
    t.clock.advance(1000);
    const max = Array.from({ length: 32 }, (_, i) => `tool.${i}`);
    const second = await amend(a, await signedBody(t, a, SCHEME, allow(...max), 'openssl'));
    expect(second.status).toBe(200);
    expect(second.body.binding).toMatchObject({ version: 2, params: { allowed_tools: max } });
    const mine = await t.request('GET', '/v1/me/policy-bindings?binding_type=tool_allow_list', { token: a.apiKey });
    const pub = await t.request('GET', `/v1/agents/${a.agentId}/policy-bindings`);
    expect(mine.body.bindings).toEqual([second.body.binding]);
    expect(pub.body.bindings).toEqual([second.body.binding]);
    const i = second.body.binding.log_index;
    const e = (await t.request('GET', `/v1/trust/log/entries?start=${i}&end=${i + 1}`)).body.entries[0].entry;
    expect(e).toMatchObject({
      kind: 'policy_binding.amended', agent_id: a.agentId,
      data: { binding_type: 'tool_allow_list', version: 2, params: { allowed_tools: max }, params_sha256: second.body.binding.params_sha256, proof: { scheme: SCHEME } },
    });
  });
});

describe('policy bindings: refusals', () => {
  let a: RegisteredAgent;
  beforeAll(async () => {
    a = await t.registerAgent();
  });

  test('422 POLICY_BINDING_TYPE_INVALID: amend with a missing, unknown or non-string type; a read filtered by an unknown type', async () => {
    for (const binding_type of [undefined, 'tool_deny_list', 7, null]) {
      const r = await amend(a, await signedBody(t, a, SCHEME, { binding_type, params: { allowed_tools: ['svc_memory'] } }));
      expect(codeOf(r), JSON.stringify(binding_type)).toEqual([422, 'POLICY_BINDING_TYPE_INVALID']);
    }
    expect(codeOf(await t.request('GET', '/v1/me/policy-bindings?binding_type=nope', { token: a.apiKey }))).toEqual([422, 'POLICY_BINDING_TYPE_INVALID']);
    expect(codeOf(await t.request('GET', `/v1/agents/${a.agentId}/policy-bindings?binding_type=nope`))).toEqual([422, 'POLICY_BINDING_TYPE_INVALID']);
  });

  test('422 POLICY_BINDING_PARAMS_INVALID: missing, not an object, other fields, not a list, 33 names, a repeat, a bad name', async () => {
    const cases: [string, unknown][] = [
      ['missing', undefined], ['a list', ['svc_memory']], ['a string', 'svc_memory'], ['another field', { allowed_tools: [], denied_tools: [] }],
      ['no allowed_tools', {}], ['allowed_tools a string', { allowed_tools: 'svc_memory' }],
      ['33 names', { allowed_tools: Array.from({ length: 33 }, (_, i) => `t${i}`) }],
      ['a repeat', { allowed_tools: ['svc_memory', 'svc_memory'] }], ['an empty name', { allowed_tools: [''] }],
      ['a name with a space', { allowed_tools: ['svc memory'] }], ['a number', { allowed_tools: [1] }], ['65 characters', { allowed_tools: ['a'.repeat(65)] }],
    ];
    for (const [what, params] of cases) {
      const r = await amend(a, await signedBody(t, a, SCHEME, { binding_type: 'tool_allow_list', params }));
      expect(codeOf(r), what).toEqual([422, 'POLICY_BINDING_PARAMS_INVALID']);
    }
    // An empty allow list is a binding (it allows no delegation at all).
    expect((await amend(a, await signedBody(t, a, SCHEME, allow()))).status).toBe(200);
  });

  test('signatures: 422 PASSPORT_SIGNATURE_REQUIRED without one; 401 PASSPORT_SIGNATURE_INVALID replayed onto other params or under another scheme', async () => {
    expect(codeOf(await amend(a, allow('svc_memory')))).toEqual([422, 'PASSPORT_SIGNATURE_REQUIRED']);
    const c = await challengeFor(t, a.agentId);
    const signedForOne = signWithNode(a.privateKeyPem, schemeBytes(SCHEME, a.agentId, c.challenge_id, c.challenge_nonce, allow('svc_memory')));
    // The signature of a narrow list sent with a wider one.
    expect(codeOf(await amend(a, { ...allow('svc_memory', 'svc_browse'), challenge_id: c.challenge_id, passport_signature: signedForOne }))).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    const c2 = await challengeFor(t, a.agentId);
    const otherScheme = signWithNode(a.privateKeyPem, schemeBytes('svc.consolidation.amend.v1', a.agentId, c2.challenge_id, c2.challenge_nonce, allow('svc_memory')));
    expect(codeOf(await amend(a, { ...allow('svc_memory'), challenge_id: c2.challenge_id, passport_signature: otherScheme }))).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
  });

  test('403 POLICY_BINDING_AMEND_FORBIDDEN while the agent is frozen', async () => {
    const f = await t.registerAgent();
    await t.database.db.updateTable('agents').set({ frozen: 1 }).where('agent_id', '=', f.agentId).execute();
    const r = await amend(f, await signedBody(t, f, SCHEME, allow('svc_memory')));
    expect([...codeOf(r), r.body.reason]).toEqual([403, 'POLICY_BINDING_AMEND_FORBIDDEN', 'frozen']);
  });

  test('409 POLICY_BINDING_CORRUPT: a stored binding whose hash differs from its log entry; a new amend repairs it', async () => {
    const c = await t.registerAgent();
    expect((await amend(c, await signedBody(t, c, SCHEME, allow('svc_memory')))).status).toBe(200);
    await t.database.db.updateTable('policy_bindings').set({ params: jcs({ allowed_tools: ['svc_memory', 'svc_browse'] }) })
      .where('agent_id', '=', c.agentId).where('superseded_at', 'is', null).execute();
    for (const r of [
      await t.request('GET', '/v1/me/policy-bindings', { token: c.apiKey }),
      await t.request('GET', `/v1/agents/${c.agentId}/policy-bindings?binding_type=tool_allow_list`),
    ]) {
      expect(codeOf(r)).toEqual([409, 'POLICY_BINDING_CORRUPT']);
      expect(r.body).toMatchObject({ binding_type: 'tool_allow_list', recorded_params_sha256: sha256('{"allowed_tools":["svc_memory"]}') });
    }
    const parity = await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN });
    expect(parity.body.mismatches).toEqual(expect.arrayContaining([expect.objectContaining({ projection: 'policy_bindings', key: `${c.agentId}/tool_allow_list/1`, field: 'params' })]));
    expect((await amend(c, await signedBody(t, c, SCHEME, allow('svc_memory')))).status).toBe(200);
    expect((await t.request('GET', '/v1/me/policy-bindings', { token: c.apiKey })).status).toBe(200);
    // The superseded row stays wrong (history); put it back for the other tests' parity checks.
    await t.database.db.updateTable('policy_bindings').set({ params: jcs({ allowed_tools: ['svc_memory'] }) }).where('agent_id', '=', c.agentId).execute();
  });
});

describe('policy bindings: security', () => {
  test('no key or a wrong key 401; a scoped key or a session on the root routes 403 ROOT_KEY_REQUIRED; the public read of an unknown agent 404', async () => {
    const a = await t.registerAgent();
    const body = await signedBody(t, a, SCHEME, allow('svc_memory'));
    for (const headers of [{}, { authorization: 'Bearer svc_nope' }] as Record<string, string>[]) {
      expect(codeOf(await t.request('GET', '/v1/me/policy-bindings', { headers }))).toEqual([401, 'INVALID_API_KEY']);
      expect(codeOf(await t.request('POST', '/v1/me/policy-bindings/amend', { headers, body }))).toEqual([401, 'INVALID_API_KEY']);
    }
    const scoped = (await t.request('POST', '/v1/me/keys', { token: a.apiKey, body: { scopes: ['svc:memory'] } })).body.api_key;
    const c = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
    const session = (await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: a.agentId, challenge_id: c.challenge_id, signature: signWithNode(a.privateKeyPem, c.sign_payload) } })).body.session_token;
    for (const key of [scoped, session]) {
      expect(codeOf(await t.request('GET', '/v1/me/policy-bindings', { token: key }))).toEqual([403, 'ROOT_KEY_REQUIRED']);
      expect(codeOf(await t.request('POST', '/v1/me/policy-bindings/amend', { token: key, body }))).toEqual([403, 'ROOT_KEY_REQUIRED']);
    }
    for (const id of [UNKNOWN, 'x']) expect(codeOf(await t.request('GET', `/v1/agents/${id}/policy-bindings`))).toEqual([404, 'AGENT_NOT_FOUND']);
    // Another agent cannot use a's signed body: a's challenge is not its own.
    const b = await t.registerAgent();
    expect(codeOf(await amend(b, body))).toEqual([404, 'CHALLENGE_NOT_FOUND']);
    expect((await amend(a, body)).status).toBe(200);
    expect((await t.request('GET', `/v1/agents/${b.agentId}/policy-bindings`)).body.bindings).toEqual([]);
  });

  test('the parity check is clean after the amends above', async () => {
    const r = await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN });
    expect([r.body.ok, r.body.mismatch_count]).toEqual([true, 0]);
  });
});
