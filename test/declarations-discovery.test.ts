/**
 * Discovery tells the truth about the declarations and the memory ledger codes: the capabilities
 * blocks (consolidation_policy with the params schema the amend route enforces, policy_bindings with
 * delegation, journal, memory_ledger versions, trust.tool_passports), the trust tool's actions, the
 * OpenAPI document (If-Match, the ledger codes, the signed-request codes) and the guide's steps.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ConsolidationParams } from '../src/modules/declarations/consolidation-params';
import { startTestApp, type TestApp } from './helpers/harness';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const NEW_ROUTES = [
  'GET /v1/me/consolidation-policy', 'GET /v1/agents/{agent_id}/consolidation-policy', 'POST /v1/me/consolidation-policy/amend',
  'GET /v1/me/policy-bindings', 'GET /v1/agents/{agent_id}/policy-bindings', 'POST /v1/me/policy-bindings/amend',
  'POST /v1/agents/{parent_agent_id}/delegate', 'POST /v1/me/journal/commit', 'GET /v1/me/journal/commitments',
  'GET /v1/agents/{agent_id}/journal/commitments', 'POST /v1/me/tools', 'POST /v1/me/tools/{tool_id}/rotate', 'POST /v1/me/tools/{tool_id}/revoke',
  'GET /v1/tools/{tool_id}/passport',
];

describe('capabilities', () => {
  test('the blocks name the routes served and the rules the routes enforce', async () => {
    const caps = (await t.request('GET', '/v1/capabilities')).body;
    const served = caps.endpoints.map((e: any) => `${e.method} ${e.path}`);
    for (const r of NEW_ROUTES) expect(served).toContain(r);
    const routes = (block: any) => block.endpoints.map((e: any) => `${e.method} ${e.path}`);
    expect(routes(caps.consolidation_policy)).toEqual(expect.arrayContaining(NEW_ROUTES.slice(0, 3)));
    expect(caps.consolidation_policy.params_schema).toEqual(JSON.parse(JSON.stringify(ConsolidationParams)));
    expect(caps.consolidation_policy).toMatchObject({ template_id: 'consolidation-v1', amend_scheme: 'svc.consolidation.amend.v1', trust_log_kind: 'consolidation.amended' });
    expect(routes(caps.policy_bindings)).toEqual(expect.arrayContaining([...NEW_ROUTES.slice(3, 7)]));
    expect(caps.policy_bindings).toMatchObject({ binding_types: ['tool_allow_list'], max_allowed_tools: 32, amend_scheme: 'svc.policy_binding.amend.v1' });
    expect(caps.policy_bindings.delegation.expires_in_seconds).toEqual({ minimum: 60, maximum: 31_536_000, default: 86_400 });
    expect(routes(caps.journal)).toEqual(expect.arrayContaining(NEW_ROUTES.slice(7, 10)));
    expect(caps.journal).toMatchObject({ label: 'svc:sealed-journal:v1', attestation_sources: ['mcp_v163', 'langgraph_v163', 'api_v163'] });
    expect(routes(caps.trust)).toEqual(expect.arrayContaining(NEW_ROUTES.slice(10)));
    expect(caps.trust.tool_passports).toMatchObject({ did_scheme: 'did:svc:tool:<tool_id>', risk_classes: ['low', 'high'], max_active_per_agent: 100 });
    expect(caps.memory_ledger.versions.conflict_error).toEqual({ status: 409, error_code: 'MEMORY_LEDGER_VERSION_CONFLICT' });
    expect(caps.memory_ledger.unavailable_error).toMatchObject({ status: 503, error_code: 'MEMORY_LEDGER_UNAVAILABLE' });
  });
});

describe('tool definitions', () => {
  test('the trust tool carries every new action, served, with the scope a scoped key needs', async () => {
    const trust = JSON.parse((await t.app.inject({ method: 'GET', url: '/mcp/v1/svc-trust.json' })).body);
    const byAction = Object.fromEntries(trust.actions.map((a: any) => [a.action, a]));
    for (const r of NEW_ROUTES) {
      const [method, path] = r.split(' ');
      const a = trust.actions.find((x: any) => x.method === method && x.path === path);
      expect(a, r).toMatchObject({ served: true });
    }
    expect(byAction.delegate).toMatchObject({ auth: 'key', scope: null });
    expect(byAction.journal_commit).toMatchObject({ auth: 'key', scope: 'svc:memory' });
    expect(byAction.amend_consolidation_policy).toMatchObject({ auth: 'root', scope: null });
    expect(byAction.tool_passport).toMatchObject({ auth: 'none' });
    expect(trust.inputSchema.properties.action.enum).toEqual(expect.arrayContaining(['amend_policy_binding', 'delegate', 'journal_commit', 'register_tool']));
    // The amend actions require the signature fields (the handler's own rules, stated).
    expect(byAction.amend_policy_binding.required).toEqual(expect.arrayContaining(['binding_type', 'params', 'challenge_id', 'passport_signature']));
  });
});

describe('OpenAPI', () => {
  test('If-Match on the memory PUT, the ledger codes in place of DATABASE_UNAVAILABLE, the signed-request codes on the amends', async () => {
    const doc = JSON.parse((await t.app.inject({ method: 'GET', url: '/openapi.json' })).body);
    const codes = (op: any, status: string) => {
      const r = op.responses?.[status];
      const text = JSON.stringify(r ?? {});
      return text;
    };
    const put = doc.paths['/v1/memory/{key}'].put;
    expect(put.parameters.map((p: any) => `${p.in}:${p.name}`)).toContain('header:if-match');
    expect(codes(put, '409')).toContain('MEMORY_LEDGER_VERSION_CONFLICT');
    for (const [path, method] of [['/v1/memory/{key}', 'put'], ['/v1/memory/{key}', 'get'], ['/v1/memory', 'get']]) {
      const op = doc.paths[path][method];
      expect(codes(op, '503'), `${method} ${path}`).toContain('MEMORY_LEDGER_UNAVAILABLE');
      expect(codes(op, '503'), `${method} ${path}`).not.toContain('DATABASE_UNAVAILABLE');
    }
    expect(codes(doc.paths['/v1/me'].get, '503')).toContain('DATABASE_UNAVAILABLE');
    const amend = doc.paths['/v1/me/consolidation-policy/amend'].post;
    for (const [status, code] of [['422', 'PASSPORT_SIGNATURE_REQUIRED'], ['401', 'PASSPORT_SIGNATURE_INVALID'], ['404', 'CHALLENGE_NOT_FOUND'], ['409', 'CHALLENGE_ALREADY_USED'],
      ['422', 'CONSOLIDATION_POLICY_PARAMS_INVALID'], ['422', 'CONSOLIDATION_POLICY_TEMPLATE_INVALID'], ['403', 'CONSOLIDATION_POLICY_AMEND_FORBIDDEN']]) {
      expect(codes(amend, status), code).toContain(code);
    }
    expect(codes(doc.paths['/v1/agents/{parent_agent_id}/delegate'].post, '403')).toContain('POLICY_BINDING_WRITE_SET_EXCEEDED');
    expect(codes(doc.paths['/v1/me/policy-bindings'].get, '409')).toContain('POLICY_BINDING_CORRUPT');
    expect(codes(doc.paths['/v1/me/journal/commit'].post, '422')).toContain('JOURNAL_PREIMAGE_FORBIDDEN');
  });
});

describe('guide', () => {
  test('the declaration steps and the safe update are served', async () => {
    const steps = (await t.request('GET', '/v1/guide')).body.steps as any[];
    const named = (s: string) => steps.find((x) => x.step === s);
    for (const s of ['commit a journal', 'register a tool', 'bind a tool allow list', 'delegate', 'declare a consolidation policy', 'update safely']) {
      expect(named(s), s).toMatchObject({ served: true });
    }
    expect(named('update safely').request.headers['if-match']).toBeDefined();
    expect(named('delegate').route).toBe('POST /v1/agents/{parent_agent_id}/delegate');
  });
});
