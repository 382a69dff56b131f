/**
 * Discovery audit: each test pins a defect found in the machine-readable discovery (capabilities,
 * tool definitions, MCP endpoint, OpenAPI), over real HTTP against a listening server.
 */
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { resolveChromiumPath } from '../src/infra/renderer/chromium';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

// A host without Chromium at the default path (a test host may have one): the renderer then has none.
vi.mock('../src/infra/renderer/chromium', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/infra/renderer/chromium')>();
  return { ...real, resolveChromiumPath: (setting: string | undefined) => (setting ? real.resolveChromiumPath(setting) : undefined) };
});

const ALLOWED_ORIGIN = 'https://inspector.example';
let t: TestApp; // defaults
let custom: TestApp; // operator settings that change what capabilities must say
let agent: RegisteredAgent;
beforeAll(async () => {
  t = await startTestApp({ listen: true });
  custom = await startTestApp({
    listen: true,
    env: {
      SVC_REFERRAL_PAYOUTS_ENABLED: 'true', SVC_REFERRAL_MIN_ACTIONS: '5', SVC_REFERRAL_CREDIT_EXPIRY_DAYS: '0',
      SVC_METERING_ENABLED: 'false', SVC_MEMORY_RATE_PER_MINUTE: '0', SVC_MCP_ALLOWED_ORIGINS: ALLOWED_ORIGIN,
    },
  });
  agent = await t.registerAgent();
});
afterAll(async () => {
  await t?.close();
  await custom?.close();
});

async function get(app: TestApp, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${app.url}${path}`, { headers });
  const text = await res.text();
  let body: any = text;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, body };
}

async function rpc(app: TestApp, token: string, message: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${app.url}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(message),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}
const callTool = async (app: TestApp, token: string, name: string, args: unknown) =>
  (await rpc(app, token, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } })).body;
const toolJson = (r: any) => JSON.parse(r.result.content[0].text);

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
const toolSchema = async (id: string) => (await get(t, `/mcp/v1/svc-${id}.json`)).body;

describe('capabilities state what this instance does', () => {
  test('referral_rewards says whether payouts are enabled (off by default) and the operator\'s activity rule', async () => {
    const def = (await get(t, '/v1/capabilities')).body.referral_rewards;
    expect(def.payouts_enabled).toBe(false); // a default instance pays no referral credit at all
    expect(def).toMatchObject({ min_metered_calls_in_window: 3, reward_credit_expires_after_days: 365, reward_usd_per_validated_signup: '0.50' });
    const on = (await get(custom, '/v1/capabilities')).body.referral_rewards;
    expect(on).toMatchObject({ payouts_enabled: true, min_metered_calls_in_window: 5, reward_credit_expires_after_days: null });
  });

  test('pricing says when metering is off (SVC_METERING_ENABLED=false): nothing is charged', async () => {
    const def = (await get(t, '/v1/capabilities')).body.pricing;
    expect(def.metering_enabled).toBe(true);
    expect(def.price_credits.search).toBe(2);
    const off = (await get(custom, '/v1/capabilities')).body.pricing;
    expect(off.metering_enabled).toBe(false);
    expect(Object.values(off.price_credits).every((v) => v === 0)).toBe(true);
    expect(off.free_floors).toBeNull();
  });

  test('SVC_MEMORY_RATE_PER_MINUTE=0 (no limit) is not advertised as a limit of 0 requests per minute', async () => {
    expect((await get(t, '/v1/capabilities')).body.rate_limits.memory_requests_per_minute).toBe(600);
    expect((await get(custom, '/v1/capabilities')).body.rate_limits.memory_requests_per_minute).toBeNull();
    const a = await custom.registerAgent();
    for (let i = 0; i < 3; i++) expect((await get(custom, '/v1/memory/stats', { authorization: `Bearer ${a.apiKey}` })).status).toBe(200);
  });

  test('browser.dynamic_mode_configured follows the renderer: no Chromium at the default path means not configured', async () => {
    expect(resolveChromiumPath(t.config.web.chromiumPath)).toBeUndefined(); // what the renderer is built with
    expect((await get(t, '/v1/capabilities')).body.browser.dynamic_mode_configured).toBe(false);
  });
});

describe('tool input schemas state what the routes enforce', () => {
  test('a search q is required (and not blank) where the route refuses its absence', async () => {
    const blobSearch = await toolSchema('blob-search');
    expect(blobSearch.inputSchema.required).toContain('q');
    const validate = ajv.compile(blobSearch.inputSchema);
    expect(validate({})).toBe(false);
    expect(validate({ q: ' \u0085\t' })).toBe(false);
    expect(validate({ q: 'invoices' })).toBe(true);
    for (const [id, path] of [['memory', '/v1/memory/search'], ['commons', '/v1/commons/search'], ['blob', '/v1/blobs/search']]) {
      const def = await toolSchema(id);
      expect(def.actions.find((x: any) => x.action === 'search').required, id).toContain('q');
      expect(ajv.compile(def.inputSchema)({ action: 'search', q: '' }), id).toBe(false);
      // The route refuses what the tool schema used to allow.
      const res = await get(t, path, { authorization: `Bearer ${agent.apiKey}` });
      expect(res.status, path).toBe(422);
      expect(res.body.error_code, path).toMatch(/_QUERY_REQUIRED$/);
    }
  });

  test('a web search q and a feedback ref_id may not be blank in the tool schemas, as the routes refuse them', async () => {
    const search = ajv.compile((await toolSchema('search')).inputSchema);
    expect(search({ q: ' \u0085 ' })).toBe(false);
    expect(search({ q: 'x' })).toBe(true);
    const blankSearch = await get(t, '/v1/search?q=%20%C2%85%20', { authorization: `Bearer ${agent.apiKey}` });
    expect([blankSearch.status, blankSearch.body.field]).toEqual([422, 'querystring.q']);
    const feedback = ajv.compile((await toolSchema('feedback')).inputSchema);
    const args = { action: 'submit', ref_type: 'search_id', ref_id: '\t \u0085', signal: 'helpful' };
    expect(feedback(args)).toBe(false);
    expect(feedback({ ...args, ref_id: 'abc' })).toBe(true);
    expect(toolJson(await callTool(t, agent.apiKey, 'svc_feedback', args)).error_code).toBe('INVALID_REF_ID');
  });

  test('a feedback note is at most 500 characters in the tool schema, as the route enforces', async () => {
    const def = await toolSchema('feedback');
    const args = { action: 'submit', ref_type: 'search_id', ref_id: 'x', signal: 'helpful', note: 'n'.repeat(501) };
    expect(ajv.compile(def.inputSchema)(args)).toBe(false);
    expect(ajv.compile(def.inputSchema)({ ...args, note: '😀'.repeat(500) })).toBe(true); // code points, as the route counts
    const r = await callTool(t, agent.apiKey, 'svc_feedback', args);
    expect(toolJson(r).error_code).toBe('NOTE_TOO_LONG');
  });

  test('blob upload: text that is not base64 is refused, not stored as other bytes', async () => {
    const before = (await get(t, '/v1/blobs', { authorization: `Bearer ${agent.apiKey}` })).body.blobs.length;
    const bad = await callTool(t, agent.apiKey, 'svc_blob_upload', { content_base64: 'hello world, not base64!' });
    expect(bad.result.isError).toBe(true);
    expect(toolJson(bad).error_code).toBe('TOOL_INPUT_INVALID');
    expect((await get(t, '/v1/blobs', { authorization: `Bearer ${agent.apiKey}` })).body.blobs.length).toBe(before);
    const def = await toolSchema('blob-upload');
    expect(ajv.compile(def.inputSchema)({ content_base64: 'hello world, not base64!' })).toBe(false);
    // An empty content_type is no media type: the tool refuses it rather than the route answering 415.
    const empty = await callTool(t, agent.apiKey, 'svc_blob_upload', { content_base64: 'aGk=', content_type: '' });
    expect(toolJson(empty).error_code).toBe('TOOL_INPUT_INVALID');
    expect(ajv.compile(def.inputSchema)({ content_base64: 'aGk=', content_type: '' })).toBe(false);
    // Standard and URL-safe alphabets, with or without padding, keep working and round-trip exactly.
    const bytes = Buffer.from([0xfb, 0xff, 0xbf, 0x01]);
    for (const text of [bytes.toString('base64'), bytes.toString('base64url')]) {
      expect(ajv.compile(def.inputSchema)({ content_base64: text })).toBe(true);
      const up = toolJson(await callTool(t, agent.apiKey, 'svc_blob_upload', { content_base64: text }));
      const down = toolJson(await callTool(t, agent.apiKey, 'svc_blob_download', { blob_id: up.blob_id }));
      expect(Buffer.from(down.content_base64, 'base64').equals(bytes), text).toBe(true);
    }
  });

  test('a property several actions share with the same rule is one schema, not anyOf copies of it', async () => {
    const blob = await toolSchema('blob');
    expect(blob.inputSchema.properties.blob_id.anyOf).toBeUndefined();
    expect(blob.inputSchema.properties.blob_id.pattern).toBe('^b_[0-9a-f]{16}$');
  });
});

describe('MCP endpoint', () => {
  test('tools/call with invalid params is -32602 (invalid params), not -32603 (internal error)', async () => {
    for (const params of [undefined, { name: 'svc_memory', arguments: [1] }, { name: 'svc_memory', arguments: 'x' }]) {
      const res = await rpc(t, agent.apiKey, { jsonrpc: '2.0', id: 9, method: 'tools/call', ...(params ? { params } : {}) });
      expect(res.status).toBe(200);
      expect(res.body, JSON.stringify(params)).toMatchObject({ jsonrpc: '2.0', id: 9, error: { code: -32602 } });
    }
    const ok = await rpc(t, agent.apiKey, { jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 'svc_memory', arguments: { action: 'stats' } } });
    expect(ok.body.result.isError).toBe(false);
  });

  test('a browser page of an allowed origin can call /mcp: preflight answered, Access-Control-Allow-Origin on answers', async () => {
    const a = await custom.registerAgent();
    const pre = await fetch(`${custom.url}/mcp`, {
      method: 'OPTIONS',
      headers: { origin: ALLOWED_ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type,mcp-protocol-version' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe(ALLOWED_ORIGIN);
    expect(pre.headers.get('access-control-allow-methods')).toContain('POST');
    for (const h of ['authorization', 'content-type', 'mcp-protocol-version']) expect(pre.headers.get('access-control-allow-headers')!.toLowerCase()).toContain(h);
    const list = await rpc(custom, a.apiKey, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { origin: ALLOWED_ORIGIN });
    expect(list.status).toBe(200);
    expect(list.headers.get('access-control-allow-origin')).toBe(ALLOWED_ORIGIN);
    expect(list.headers.get('vary')).toContain('Origin');
    // The page can read a refusal too.
    const refused = await rpc(custom, 'svc_wrong', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { origin: ALLOWED_ORIGIN });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(ALLOWED_ORIGIN);
    // Other origins get nothing of it.
    const evil = await fetch(`${custom.url}/mcp`, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
    expect(evil.status).toBe(403);
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    expect((await evil.json() as any).error_code).toBe('ORIGIN_NOT_ALLOWED');
    // The preflight is plumbing, not an operation: not in the route table or the OpenAPI document.
    const caps = (await get(custom, '/v1/capabilities')).body;
    expect(caps.endpoints.some((e: any) => e.method === 'OPTIONS')).toBe(false);
    expect((await get(custom, '/openapi.json')).body.paths['/mcp'].options).toBeUndefined();
  });
});

describe('OpenAPI document', () => {
  test('search q is a required parameter, a feedback note has its bound, as the routes enforce', async () => {
    const doc = (await get(t, '/openapi.json')).body;
    for (const path of ['/v1/memory/search', '/v1/commons/search', '/v1/blobs/search']) {
      const q = doc.paths[path].get.parameters.find((p: any) => p.name === 'q');
      expect(q.required, path).toBe(true);
      expect(q.schema.minLength, path).toBe(1);
    }
    const note = doc.paths['/v1/feedback'].post.requestBody.content['application/json'].schema.properties.note;
    expect(note.anyOf.find((m: any) => m.type === 'string').maxLength).toBe(500);
    // The route's own schema object is untouched (its validator gives NOTE_TOO_LONG, not VALIDATION_FAILED).
    const res = await fetch(`${t.url}/v1/feedback`, {
      method: 'POST', headers: { authorization: `Bearer ${agent.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ref_type: 'search_id', ref_id: 'x', signal: 'helpful', note: 'n'.repeat(501) }),
    });
    expect(((await res.json()) as any).error_code).toBe('NOTE_TOO_LONG');
  });

  test('PUT /v1/blobs documents its body: multipart field `file`, or raw bytes', async () => {
    const body = (await get(t, '/openapi.json')).body.paths['/v1/blobs'].put.requestBody;
    expect(body?.required).toBe(true);
    expect(body.content['multipart/form-data'].schema.required).toEqual(['file']);
    expect(body.content['application/octet-stream']).toBeTruthy();
    // What it documents works: a raw upload under its own Content-Type.
    const res = await fetch(`${t.url}/v1/blobs`, { method: 'PUT', headers: { authorization: `Bearer ${agent.apiKey}`, 'content-type': 'application/octet-stream' }, body: Buffer.from('raw') });
    expect(res.status).toBe(201);
  });
});
