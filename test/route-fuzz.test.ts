/**
 * Bad input never gives a 500. Walks every operation of the live OpenAPI document (so a route added
 * by any module is covered without editing this file) and sends it hostile values: odd path
 * parameters, every query parameter and every body property set to values of the wrong type, out of
 * range, empty, huge or repeated, and bodies that are not the JSON object a route expects. Calls are
 * made with a real agent's key and the admin key, so they get past authentication.
 *
 * Set FUZZ_SUMMARY=1 to print one line per kind of finding and the spread of statuses.
 *
 * Every answer must be a clean refusal or a success: never status 500, and any 5xx must carry one of
 * the documented specific codes (a provider that is not configured, a payment processor that is not
 * set up), never the generic internal error. Every error answer is the API's JSON error object.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type TestApp } from './helpers/harness';

let t: TestApp;
let doc: any;
let headers: Record<string, string>;
let blobId: string;
beforeAll(async () => {
  t = await startTestApp({ env: { SVC_QUEUE_SECRET: 'route-fuzz-queue-secret' } });
  doc = (await t.request('GET', '/openapi.json')).body;
  const a = await t.registerAgent();
  headers = { authorization: `Bearer ${a.apiKey}`, 'x-admin-key': 'test-admin-key' };
  const put = await t.request('PUT', '/v1/blobs', { headers: { ...headers, 'content-type': 'text/csv' }, body: Buffer.from('a,b\n1,2\n') });
  blobId = put.body.blob_id;
  await t.request('PUT', '/v1/memory/fuzz.key', { headers, body: { value: { a: 1 } } });
});
afterAll(async () => t?.close());

const LONG = 'x'.repeat(20_000);
/** Strings for path and query parameters (they arrive as text). */
const TEXT = ['', ' ', '0', '-1', '1.5', '1e309', '99999999999999999999999', 'NaN', 'true', 'null', '[]', '{}', '%00', '..%2F..%2Fetc%2Fpasswd',
  '%F0%9F%92%A5', "'; drop table agents; --", LONG];
/** JSON values for body properties. */
const VALUES: unknown[] = [null, -1, 0, 1.5, 1e308, -1e308, 2 ** 53 + 1, '', ' ', 'x', 'nul\u0000inside', LONG, true, [], [1, 'a', null], {}, { nested: { deeper: [{}] } }];
/** Whole bodies that are not the object a route expects (raw text, sent as application/json). */
const RAW_BODIES = ['{', '[]', 'null', '"text"', '123', '{"a":', '\u0000', '{}'.padEnd(5000, ' '), `{"a":${'['.repeat(6000)}${']'.repeat(6000)}}`];

/** Bodies whose every field is one no route names (a NUL-suffixed or re-cased known name among them). */
const UNKNOWN_BODIES: Record<string, unknown>[] = [{ a: 1 }, { 'skills\u0000': ['x'] }, { Value: { a: 1 }, 'key ': 'k' }, { zz_unknown: null, zz_other: [] }];

const concrete = (path: string, override?: { name: string; value: string }) => path.replace(/\{([A-Za-z0-9_]+)\}/g, (_m, p: string) => {
  if (override && override.name === p) return override.value;
  if (p === 'blob_id') return blobId;
  if (p === 'key') return 'fuzz.key';
  if (p === 'file') return 'svc-memory.json';
  return p.endsWith('id') ? '00000000-0000-4000-8000-000000000000' : 'x';
});

interface Operation { method: string; path: string; pathParams: string[]; query: string[]; bodyProps: string[]; hasBody: boolean; plausible?: Record<string, unknown> }

/** A value that passes a (simple) JSON schema: so that one hostile field is all that is wrong. */
function plausible(schema: any, name = ''): unknown {
  if (!schema || typeof schema !== 'object') return 'x';
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.anyOf)) return plausible(schema.anyOf.find((s: any) => s.type !== 'null') ?? schema.anyOf[0], name);
  switch (Array.isArray(schema.type) ? schema.type.find((x: string) => x !== 'null') : schema.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const k of schema.required ?? []) out[k] = plausible(schema.properties?.[k], k);
      return out;
    }
    case 'array': return schema.minItems ? Array.from({ length: schema.minItems }, () => plausible(schema.items, name)) : [];
    case 'integer': return schema.minimum ?? 1;
    case 'number': return schema.minimum ?? 0.5;
    case 'boolean': return true;
    case 'string':
      if (schema.format === 'uri' || /url$/.test(name)) return 'https://example.com/';
      if (/blob_id/.test(name)) return blobId;
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
    default: return { fuzz: true };
  }
}

function operations(): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      const params: any[] = op.parameters ?? [];
      const body = op.requestBody?.content?.['application/json']?.schema;
      out.push({
        method: method.toUpperCase(), path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        query: params.filter((p) => p.in === 'query').map((p) => p.name),
        bodyProps: Object.keys(body?.properties ?? {}),
        hasBody: ['POST', 'PUT', 'PATCH'].includes(method.toUpperCase()),
        plausible: body?.type === 'object' ? plausible(body) as Record<string, unknown> : undefined,
      });
    }
  }
  return out;
}

interface Finding { call: string; status: number; body: string }
const statuses = new Map<number, number>();

async function probe(findings: Finding[], label: string, method: string, url: string, body?: unknown, raw = false) {
  const res = raw
    ? await t.app.inject({ method: method as never, url, headers: { ...headers, 'content-type': 'application/json' }, payload: body as string })
    : await t.app.inject({ method: method as never, url, headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' }, ...(body === undefined ? {} : { payload: JSON.stringify(body) }) });
  const status = res.statusCode;
  statuses.set(status, (statuses.get(status) ?? 0) + 1);
  if (method === 'HEAD') {
    // A HEAD answer has no body by HTTP's rule: it must be empty and carry the status of the same GET
    // (whose error body the GET operation's own probes check).
    const get = await t.app.inject({ method: 'GET', url, headers });
    if (status === 500 || res.body !== '' || status !== get.statusCode) findings.push({ call: `${label}: HEAD ${url.slice(0, 160)}`, status, body: `${res.body.slice(0, 200)} (GET: ${get.statusCode})` });
    return;
  }
  let parsed: any;
  try { parsed = JSON.parse(res.body); } catch { parsed = undefined; }
  // The MCP endpoint speaks JSON-RPC: its refusals are JSON-RPC error objects, by that protocol
  // (a body that is not JSON at all is refused before it, in the API's format).
  const apiShape = typeof parsed?.error_code === 'string' && typeof parsed?.message === 'string';
  const errorShape = apiShape || (url.split('?')[0] === '/mcp' && typeof parsed?.error?.code === 'number' && typeof parsed?.error?.message === 'string');
  const bad = status === 500
    || (status > 500 && (!parsed?.error_code || parsed.error_code === 'INTERNAL_ERROR'))
    || (status >= 400 && res.headers['content-type']?.toString().includes('json') && !errorShape);
  if (bad) findings.push({ call: `${label}: ${method} ${url.slice(0, 160)}`, status, body: res.body.slice(0, 300) });
}

describe('hostile input on every operation of the OpenAPI document', () => {
  test('the document lists the routes to walk (sanity)', () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThan(60);
    expect(ops.some((o) => o.query.length > 0)).toBe(true);
    expect(ops.some((o) => o.bodyProps.length > 0)).toBe(true);
  });

  test('no 500, and every error is the JSON error object', async () => {
    const findings: Finding[] = [];
    let calls = 0;
    for (const op of operations()) {
      const base = concrete(op.path);
      for (const name of op.pathParams) {
        for (const v of TEXT) {
          await probe(findings, `path ${name}`, op.method, concrete(op.path, { name, value: encodeURIComponent(decodeURIComponent(v.replace(/%(?![0-9A-F]{2})/g, '%25'))) }), op.hasBody ? {} : undefined);
          calls++;
        }
      }
      for (const name of op.query) {
        for (const v of TEXT) {
          const q = `${encodeURIComponent(name)}=${v.startsWith('%') || v.includes('%2F') ? v : encodeURIComponent(v)}`;
          await probe(findings, `query ${name}`, op.method, `${base}?${q}`, op.hasBody ? {} : undefined);
          calls++;
        }
        await probe(findings, `query ${name} repeated`, op.method, `${base}?${name}=1&${name}=2`, op.hasBody ? {} : undefined);
        calls++;
      }
      if (op.hasBody) {
        for (const prop of op.bodyProps) {
          for (const v of VALUES) {
            await probe(findings, `body ${prop}`, op.method, base, { [prop]: v });
            // The same value with every other required field plausible, so the handler runs.
            if (op.plausible) await probe(findings, `body ${prop} (rest plausible)`, op.method, base, { ...op.plausible, [prop]: v });
            calls += op.plausible ? 2 : 1;
          }
          // JSON numbers past the double range (JSON.parse reads them as Infinity).
          await probe(findings, `body ${prop} 1e309`, op.method, base, `{"${prop}":1e309}`, true);
          await probe(findings, `body ${prop} nested -1e999`, op.method, base, `{"${prop}":{"n":[-1e999]}}`, true);
          calls += 2;
        }
        // Bodies of only fields the schema does not name (ignored by the handler): whatever the schema
        // requires, nothing reaches a store as "nothing to change" (an UPDATE with no SET was a 500).
        for (const unknown of UNKNOWN_BODIES) {
          await probe(findings, 'body of unknown fields', op.method, base, unknown);
          calls++;
        }
        for (const raw of RAW_BODIES) {
          await probe(findings, 'raw body', op.method, base, raw, true);
          calls++;
        }
        await probe(findings, 'array body', op.method, base, [{}]);
        calls++;
      }
    }
    expect(calls).toBeGreaterThan(1000);
    if (process.env.FUZZ_SUMMARY) {
      const seen = new Map<string, string>();
      for (const f of findings) {
        const k = `${f.status} ${f.call.split(':')[0]} ${f.body.slice(0, 80)}`.replace(/x{20,}/g, 'x…');
        if (!seen.has(k)) seen.set(k, f.call.slice(0, 140));
      }
      for (const [k, v] of seen) console.log(k, '<=', v);
      console.log('calls', calls, 'statuses', JSON.stringify([...statuses].sort((a, b) => a[0] - b[0])));
    }
    expect(findings, JSON.stringify(findings.slice(0, 25), null, 1)).toEqual([]);
  }, 600_000);
});
