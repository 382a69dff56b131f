/**
 * Walks the live route table (the capabilities endpoint lists every registered route), so a
 * route added by any module is checked without editing this file: public routes answer
 * without a key, every other route refuses with 401 INVALID_API_KEY, and only routes the API
 * names as public may be public.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CAPABILITIES } from '../src/lib/capabilities';
import { startTestApp, type TestApp } from './helpers/harness';

let t: TestApp;
let endpoints: { method: string; path: string; auth: string; scope?: string }[];
beforeAll(async () => {
  t = await startTestApp({ env: { SVC_QUEUE_SECRET: 'route-auth-queue-secret' } });
  endpoints = (await t.request('GET', '/v1/capabilities')).body.endpoints;
});
afterAll(async () => t?.close());

/**
 * The routes the API contract makes public (its authentication rules and each route's auth): the
 * only routes allowed without a key. Non-/v1 discovery documents and signature-authenticated inbound routes are also listed.
 */
const PUBLIC_ALLOWED: RegExp[] = [
  /^\/health$/, /^\/openapi\.json$/, /^\/docs(\/designs)?$/, /^\/\.well-known\/(ai-agent|agent-card)\.json$/, /^\/mcp(\/v1)?\/\{file\}$/,
  /^\/v1\/register$/, /^\/v1\/capabilities$/, /^\/v1\/billing\/config$/, /^\/v1\/guide$/, /^\/v1\/agent-template$/, /^\/v1\/mcp\/manifest$/,
  /^\/v1\/agents$/, /^\/v1\/agents\/\{[a-z_]+\}\/(passport|agent-card|reputation\/history|covenant|recovery\/intents|journal\/commitments|consolidation-policy|policy-bindings)$/,
  /^\/v1\/tools\/\{[a-z_]+\}\/passport$/, /^\/v1\/community$/, /^\/v1\/auth\/passport\/(challenge|verify|ephemeral)$/,
  /^\/v1\/recovery\/(intent|initiate|complete)$/, // signed with the recovery key
  /^\/v1\/billing\/payment-processor\/webhook$/, /^\/internal\/queue\/parse$/, // signature-authenticated
  /^\/billing(\/\{asset\})?$/, // the billing page (billing_page_url) and its static assets
  /^\/v1\/blobs\/signed\/.+$/, // signed blob URLs: the HMAC in the URL is the credential
  /^\/terms$/, // where _svc.terms_url points by default: what agree_to_terms accepts, read before registering
  /^\/$/, // the base address: the discovery document
  // The trust log is public so anyone can check a rating's inclusion and the log's consistency (docs/decisions.md).
  /^\/v1\/trust\/log\/(checkpoint|entries|proof\/inclusion|proof\/consistency)$/, /^\/\.well-known\/svc-trust-log\.json$/,
];

const concrete = (path: string) => path.replace(/\{([A-Za-z0-9_]+)\}/g, (_m, p: string) =>
  p === 'blob_id' ? 'b_0123456789abcdef' : p === 'file' ? 'svc-memory.json' : p.endsWith('id') ? '00000000-0000-4000-8000-000000000000' : 'x');

async function call(e: { method: string; path: string }, headers: Record<string, string> = {}) {
  const body = ['POST', 'PUT', 'PATCH'].includes(e.method) ? {} : undefined;
  return t.request(e.method as any, concrete(e.path), { headers, ...(body ? { body } : {}) });
}

describe('every route in the live table', () => {
  test('the table is the whole app (sanity: it includes routes of several modules)', () => {
    expect(endpoints.length).toBeGreaterThan(15);
    const paths = endpoints.map((e) => e.path);
    for (const p of ['/health', '/v1/register', '/v1/me', '/v1/capabilities', '/mcp']) expect(paths).toContain(p);
  });

  test('only routes the spec makes public are public', () => {
    const offenders = endpoints.filter((e) => e.auth === 'none' && !PUBLIC_ALLOWED.some((re) => re.test(e.path)));
    expect(offenders.map((e) => `${e.method} ${e.path}`)).toEqual([]);
  });

  test('public and optional routes answer without a key', async () => {
    for (const e of endpoints.filter((x) => x.auth === 'none' || x.auth === 'optional')) {
      const res = await call(e);
      expect(res.body?.error_code, `${e.method} ${e.path}`).not.toBe('INVALID_API_KEY');
      // A feature the host has not configured may answer 503 *_NOT_CONFIGURED; nothing may fail.
      if (res.status >= 500) expect(`${res.status} ${res.body?.error_code}`, `${e.method} ${e.path}`).toMatch(/^503 \w*(NOT_CONFIGURED|UNCONFIGURED)$/);
    }
  });

  test('key and root routes refuse a missing key, a malformed header and a wrong key with 401 INVALID_API_KEY', async () => {
    const protectedRoutes = endpoints.filter((x) => x.auth === 'key' || x.auth === 'root');
    expect(protectedRoutes.length).toBeGreaterThan(1);
    for (const e of protectedRoutes) {
      const variants: Record<string, string>[] = [{}, { authorization: 'Basic abc' }, { authorization: 'Bearer svc_wrong-key-0000000000000000000000000000' }];
      for (const headers of variants) {
        const res = await call(e, headers);
        expect(res.status, `${e.method} ${e.path} ${JSON.stringify(headers)}`).toBe(401);
        expect(res.body.error_code).toBe('INVALID_API_KEY');
        expect(res.body.register_url).toBe(`${t.config.core.baseUrl}/v1/register`);
        expect(res.headers['www-authenticate'], `${e.method} ${e.path}`).toBe('Bearer realm="svc"');
      }
    }
  });

  test('a scoped key: refused on every route outside its scopes (403 SCOPE_NOT_GRANTED), on root routes (ROOT_KEY_REQUIRED); let through where any key may go', async () => {
    const a = await t.registerAgent();
    const keys = new Map<string, string>();
    const keyWith = async (scopes: string[]) => {
      const id = scopes.join(' ');
      if (!keys.has(id)) {
        const res = await t.request('POST', '/v1/me/keys', { token: a.apiKey, body: { scopes } });
        expect(res.status).toBe(201);
        keys.set(id, res.body.api_key);
      }
      return keys.get(id)!;
    };
    const checked = { outside: 0, root: 0, open: 0 };
    for (const e of endpoints.filter((x) => x.auth === 'key' || x.auth === 'root' || x.auth === 'optional')) {
      const where = `${e.method} ${e.path} (scope ${e.scope ?? 'none'})`;
      if (e.auth === 'root') {
        const res = await call(e, { authorization: `Bearer ${await keyWith([...CAPABILITIES])}` });
        expect(`${res.status} ${res.body?.error_code}`, where).toBe('403 ROOT_KEY_REQUIRED');
        checked.root++;
      } else if (e.scope === 'any' || (e.auth === 'optional' && e.scope === undefined)) {
        const res = await call(e, { authorization: `Bearer ${await keyWith(['svc:search'])}` });
        expect(res.body?.error_code, where).not.toBe('SCOPE_NOT_GRANTED');
        expect(res.status, where).not.toBe(401);
        checked.open++;
      } else {
        // Every scope but the one the route needs (all of them for a route closed to scoped keys).
        const lacking = CAPABILITIES.filter((c) => c !== e.scope);
        const res = await call(e, { authorization: `Bearer ${await keyWith(lacking)}` });
        expect(`${res.status} ${res.body?.error_code}`, where).toBe('403 SCOPE_NOT_GRANTED');
        expect(res.body.required_scope, where).toBe(e.scope ?? null);
        checked.outside++;
      }
    }
    expect(checked.outside).toBeGreaterThan(20);
    expect(checked.root).toBeGreaterThanOrEqual(4);
    expect(checked.open).toBeGreaterThan(5);
  });

  test('every key route declares its scope, or is one of the routes deliberately closed to scoped keys', () => {
    const closed = endpoints.filter((e) => e.auth === 'key' && e.scope === undefined).map((e) => `${e.method} ${e.path}`);
    // Money moves and the trust layer speak for the agent: root key or passport session only (docs/decisions.md).
    const allowed = [/^POST \/v1\/billing\//, /^POST \/v1\/feedback\/interaction$/, /^POST \/v1\/reputation\/dispute$/, /^POST \/v1\/agents\//];
    expect(closed.filter((r) => !allowed.some((re) => re.test(r)))).toEqual([]);
  });

  test('admin routes refuse without X-Admin-Key, and a Bearer key is not enough', async () => {
    const a = await t.registerAgent();
    for (const e of endpoints.filter((x) => x.auth === 'admin')) {
      const variants: Record<string, string>[] = [{}, { authorization: `Bearer ${a.apiKey}` }, { 'x-admin-key': 'wrong' }];
      for (const headers of variants) {
        const res = await call(e, headers);
        expect(res.status, `${e.method} ${e.path}`).toBe(401);
        expect(res.body.error_code).toBe('INVALID_ADMIN_KEY');
      }
    }
  });
});
