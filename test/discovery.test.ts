import { readFileSync } from 'node:fs';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TIERS } from '../src/lib/tiers';
import { SVC_VERSION } from '../src/version';
import { startTestApp, type TestApp } from './helpers/harness';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { SVC_BASE_URL: 'https://svc.example.test' } });
});
afterAll(async () => t?.close());

const BLOCKS = ['version', 'base_url', 'endpoints', 'authentication', 'rate_limits', 'billing_tiers', 'credibility_scoring', 'feedback',
  'browser', 'passport', 'covenant', 'memory_ledger', 'consolidation_policy', 'policy_bindings', 'recovery', 'journal', 'dispute', 'trust',
  'directory', 'commons', 'pricing', 'tier_descriptions', 'referral_rewards', 'document_storage', 'mcp'];

describe('GET /v1/capabilities', () => {
  test('has every block of the spec, the shared version and the configured base URL', async () => {
    const res = await t.request('GET', '/v1/capabilities');
    expect(res.status).toBe(200);
    for (const b of BLOCKS) expect(res.body, b).toHaveProperty(b);
    const health = await t.request('GET', '/health');
    expect(res.body.version).toBe(SVC_VERSION);
    expect(res.body.version).toBe(health.body.version);
    expect(res.body.base_url).toBe('https://svc.example.test');
    expect(res.body.referral_rewards.your_referral_code).toBeUndefined();
  });

  test('endpoints are the live route table: every route with method, path, auth and summary', async () => {
    const { body } = await t.request('GET', '/v1/capabilities');
    const listed = new Set(body.endpoints.map((e: any) => `${e.method} ${e.path}`));
    for (const r of ['POST /v1/register', 'GET /v1/me', 'GET /health', 'GET /v1/capabilities', 'POST /mcp', 'GET /mcp/v1/{file}']) expect(listed).toContain(r);
    expect(body.endpoints.find((e: any) => e.path === '/v1/me')).toMatchObject({ auth: 'key', summary: 'The authenticated agent record' });
    expect(body.endpoints.find((e: any) => e.path === '/v1/capabilities').auth).toBe('optional');
    expect(body.endpoints.every((e: any) => typeof e.summary === 'string' && e.summary.length > 0)).toBe(true);
    // No HEAD twins: they are not routes of their own.
    expect(body.endpoints.some((e: any) => e.method === 'HEAD')).toBe(false);
    expect(body.authentication.public_endpoints).toContain('POST /v1/register');
    expect(body.authentication.public_endpoints).not.toContain('GET /v1/me');
  });

  test('tiers, descriptions and limits come from the tier table and configuration', async () => {
    const { body } = await t.request('GET', '/v1/capabilities');
    expect(body.billing_tiers.map((x: any) => x.name)).toEqual(Object.keys(TIERS));
    const free = body.billing_tiers.find((x: any) => x.name === 'free');
    expect(free).toMatchObject({
      memory_writes_per_month: TIERS.free.memoryWritesPerMonth, memory_storage_bytes: TIERS.free.memoryStorageBytes, feedback_per_month: TIERS.free.feedbackPerMonth,
      approval_events_per_month: TIERS.free.approvalEventsPerMonth,
      free_calls_per_30_days: { search: 50, browse: 20, memory_write: 1000 }, // the published free-tier figures
    });
    expect(body.billing_tiers.find((x: any) => x.name === 'starter')).toMatchObject({ search_calls_per_month: 3000, free_calls_per_30_days: null });
    expect(body.feedback.note).toEqual({ max_characters: 500, counted_in: 'Unicode code points', nullable: true });
    expect(body.trust.endpoints).toEqual(expect.arrayContaining([expect.objectContaining({ path: '/v1/me/approval-events' })]));
    expect(body.tier_descriptions.pro).toBe(TIERS.pro.description);
    expect(body.document_storage.max_blob_bytes).toBe(t.config.blobs.maxBytes);
    expect(body.browser.max_response_bytes).toBe(t.config.web.browseMaxBytes);
    expect(body.rate_limits.parse_per_minute_by_tier.deploy).toBe(TIERS.deploy.parsePerMinute);
    expect(body.credibility_scoring.rules.map((r: any) => r.score)).toEqual([1.0, 0.9, 0.8, 0.7, 0.5]);
    expect(body.mcp.tools).toHaveLength(19);
    expect(body.mcp.endpoint).toBe('https://svc.example.test/mcp');
  });

  test('an optional Bearer adds your_referral_code; an invalid one is refused', async () => {
    const a = await t.registerAgent();
    const res = await t.request('GET', '/v1/capabilities', { token: a.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.referral_rewards.your_referral_code).toBe(a.agentId);
    const bad = await t.request('GET', '/v1/capabilities', { token: 'svc_not-a-real-key' });
    expect(bad.status).toBe(401);
    expect(bad.body.error_code).toBe('INVALID_API_KEY');
  });
});

describe('guide and agent template', () => {
  test('the guide lists the spec steps, each with a request that matches a route', async () => {
    const res = await t.request('GET', '/v1/guide');
    expect(res.status).toBe(200);
    const names = res.body.steps.map((s: any) => `${s.group}:${s.step}`);
    for (const s of ['start:discover', 'start:register', 'start:referral', 'use:search', 'use:feedback', 'use:check usage', 'use:upgrade',
      'memory:store', 'memory:retrieve', 'memory:list', 'memory:stats', 'memory:context', 'memory:semantic search',
      'blobs:upload', 'blobs:download', 'blobs:list', 'blobs:metadata', 'blobs:delete']) expect(names).toContain(s);
    const register = res.body.steps.find((s: any) => s.step === 'register');
    expect(register).toMatchObject({ route: 'POST /v1/register', auth: 'none', served: true });
    expect(register.request.url).toBe('https://svc.example.test/v1/register');
    expect(register.request.body).toHaveProperty('agree_to_terms', true);
    for (const s of res.body.steps) expect(s.request.url.startsWith('https://svc.example.test/')).toBe(true);
  });

  test('the base address answers the discovery document, as /.well-known/ai-agent.json does', async () => {
    const root = await t.request('GET', '/');
    expect(root.status).toBe(200);
    expect(root.body).toEqual((await t.request('GET', '/.well-known/ai-agent.json')).body);
    expect(root.body.capabilities_url).toBe('https://svc.example.test/v1/capabilities');
  });

  test('the guide\'s JSON requests work when sent as written: exactly their headers (content-type included) and body', async () => {
    const { body } = await t.request('GET', '/v1/guide');
    const step = body.steps.find((s: any) => s.step === 'register');
    const { generateEd25519 } = await import('../src/lib/ed25519');
    const send = (s: any, token?: string, patch: object = {}) => t.app.inject({
      method: s.request.method, url: new URL(s.request.url).pathname,
      headers: Object.fromEntries(Object.entries<string>(s.request.headers ?? {}).map(([k, v]) => [k, token ? v.replace('<api_key>', token) : v])),
      payload: JSON.stringify({ ...s.request.body, ...patch }),
    });
    expect(step.request.headers).toEqual({ 'content-type': 'application/json' });
    const reg = await send(step, undefined, { passport_public_key: generateEd25519().publicKeyPem });
    expect(reg.statusCode).toBe(201);
    const token = reg.json().api_key;
    for (const name of ['store', 'feedback']) {
      const s = body.steps.find((x: any) => x.step === name);
      expect(s.request.headers['content-type'], name).toBe('application/json');
      const res = await send(s, token, name === 'feedback' ? { ref_id: 'guide-test' } : {});
      expect(res.statusCode, `${name}: ${res.body}`).toBeLessThan(300);
    }
  });

  test('agent template carries the fields an agent fills in and the MCP settings', async () => {
    const res = await t.request('GET', '/v1/agent-template');
    expect(res.status).toBe(200);
    expect(res.body.template.svc.base_url).toBe('https://svc.example.test');
    expect(res.body.template.registration).toHaveProperty('agent_name');
    expect(res.body.template.mcp.url).toBe('https://svc.example.test/mcp');
    expect(res.body.template.mcp.tools).toContain('svc_memory');
  });
});

describe('terms', () => {
  test('_svc.terms_url answers: the default terms with their version, or a redirect to the operator\'s own', async () => {
    const reg = await t.request('POST', '/v1/register', { body: { agent_name: 'terms-reader', owner_identifier: 'terms-owner', agree_to_terms: true } });
    expect(reg.body._svc.terms_url).toBe('https://svc.example.test/terms');
    const res = await t.request('GET', '/terms');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', terms_version: reg.body._svc.terms_version, terms_url: 'https://svc.example.test/terms' });
    expect(res.body.terms.length).toBeGreaterThan(3);
    const own = await startTestApp({ env: { SVC_TERMS_URL: 'https://operator.example/tos', SVC_TERMS_VERSION: '2027-01-01' } });
    try {
      const r = await own.request('GET', '/terms');
      expect(r.status).toBe(302);
      expect(r.headers.location).toBe('https://operator.example/tos');
    } finally {
      await own.close();
    }
  });
});

describe('community and agent cards', () => {
  test('GET /v1/community counts real registrations', async () => {
    const before = (await t.request('GET', '/v1/community')).body;
    await t.registerAgent();
    const after = (await t.request('GET', '/v1/community')).body;
    expect(after.agents_registered).toBe(before.agents_registered + 1);
    expect(after.agents_registered_last_7d).toBe(before.agents_registered_last_7d + 1);
    expect(after).toHaveProperty('directory_listed');
    expect(after.founding_period_ends_at).toBe('2027-06-30T00:00:00.000Z');
  });

  const schema = JSON.parse(readFileSync(new URL('./fixtures/a2a-agent-card-v1.schema.json', import.meta.url), 'utf8'));
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats(ajv);
  const validate = ajv.compile(schema);

  test('/.well-known/agent-card.json is a valid A2A v1.0 AgentCard', async () => {
    const res = await t.request('GET', '/.well-known/agent-card.json');
    expect(res.status).toBe(200);
    expect(validate(res.body), JSON.stringify(validate.errors)).toBe(true);
    expect(res.body.supportedInterfaces[0].url).toBe('https://svc.example.test/mcp');
    expect(res.body.securitySchemes.svc_bearer.httpAuthSecurityScheme.scheme).toBe('Bearer');
    expect(res.body.skills.map((s: any) => s.id)).toContain('svc_memory');
  });

  test('the schema check can fail: a card without supportedInterfaces is refused', async () => {
    const { body } = await t.request('GET', '/.well-known/agent-card.json');
    delete body.supportedInterfaces;
    expect(validate(body)).toBe(false);
  });

  test('an agent card is minimal and valid; unknown agent is 404', async () => {
    const a = await t.registerAgent();
    const res = await t.request('GET', `/v1/agents/${a.agentId}/agent-card`);
    expect(res.status).toBe(200);
    expect(validate(res.body), JSON.stringify(validate.errors)).toBe(true);
    const params = res.body.capabilities.extensions[0].params;
    expect(params.did).toBe(`did:svc:${a.agentId}`);
    expect(params).not.toHaveProperty('trust_levels');
    expect(res.raw).not.toContain('BEGIN PUBLIC KEY');
    expect(res.raw).not.toContain('owner-');
    const missing = await t.request('GET', '/v1/agents/00000000-0000-4000-8000-000000000000/agent-card');
    expect(missing.status).toBe(404);
    expect(missing.body.error_code).toBe('AGENT_NOT_FOUND');
  });

  test('/.well-known/ai-agent.json points at every discovery document', async () => {
    const res = await t.request('GET', '/.well-known/ai-agent.json');
    expect(res.status).toBe(200);
    for (const k of ['capabilities_url', 'guide_url', 'agent_template_url', 'openapi_url', 'agent_card_url', 'register_url']) {
      const path = new URL(res.body[k]).pathname;
      expect((await t.request(k === 'register_url' ? 'POST' : 'GET', path, k === 'register_url' ? { body: {} } : {})).status, k).not.toBe(404);
    }
  });
});
