import SwaggerParser from '@apidevtools/swagger-parser';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type TestApp } from './helpers/harness';

let t: TestApp;
let doc: any;
beforeAll(async () => {
  t = await startTestApp();
  doc = (await t.request('GET', '/openapi.json')).body;
});
afterAll(async () => t?.close());

describe('GET /openapi.json', () => {
  test('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeTruthy();
  });

  test('validates against the OpenAPI 3.1 schema (a maintained validator, offline), and that validator can fail', async () => {
    const validate = async (d: unknown) => {
      const v = new Validator();
      const res = await v.validate(structuredClone(d) as Record<string, unknown>);
      return { valid: res.valid, errors: JSON.stringify(res.errors ?? []).slice(0, 2000) };
    };
    expect(await validate(doc)).toEqual({ valid: true, errors: '[]' });
    const broken = structuredClone(doc);
    broken.paths['/v1/me'].get.responses['200'] = { content: {} };
    expect((await validate(broken)).valid).toBe(false);
  });

  /** Error statuses whose body is the route's own: the JSON-RPC errors of MCP, the health probe's 503. */
  const OWN_ERROR_BODIES = ['post /mcp 400', 'post /mcp 406', 'get /health 503'];

  test('every response of every operation has a description, and every error status the shared ApiError body', () => {
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        for (const [status, r] of Object.entries<any>(op.responses)) {
          expect(typeof r.description, `${method} ${path} ${status}`).toBe('string');
          // The shared body, except where a route declares one of its own for the status (listed here).
          if (Number(status) >= 400 && r.content['application/json'].schema.$ref !== '#/components/schemas/ApiError') {
            expect(OWN_ERROR_BODIES, `${method} ${path} ${status}: neither ApiError nor a body of the route's own`).toContain(`${method} ${path} ${status}`);
          }
        }
      }
    }
  });

  test('the validator can fail: a broken document is refused', async () => {
    const broken = structuredClone(doc);
    broken.paths['/v1/me'].get.responses = 'nope';
    await expect(SwaggerParser.validate(broken)).rejects.toThrow();
  });

  test('covers every route of the live route table, with security and error responses', async () => {
    const { body } = await t.request('GET', '/v1/capabilities');
    for (const e of body.endpoints) {
      const op = doc.paths[e.path]?.[e.method.toLowerCase()];
      expect(op, `${e.method} ${e.path}`).toBeTruthy();
      expect(op.summary).toBe(e.summary);
      expect(op['x-svc-auth']).toBe(e.auth);
      expect(op.responses['500'].content['application/json'].schema.$ref).toBe('#/components/schemas/ApiError');
      if (e.auth === 'key' || e.auth === 'root') {
        expect(op.security).toEqual([{ bearer: [] }]);
        expect(op.responses['401'].content['application/json'].schema['x-svc-error-codes']).toContain('INVALID_API_KEY');
      }
      if (e.auth === 'none') expect(op.security).toEqual([]);
    }
    expect(doc.components.schemas.ApiError.required).toEqual(['error_code', 'message']);
  });

  test('route-specific validation codes appear under their status', () => {
    const codes = doc.paths['/v1/register'].post.responses['422'].content['application/json'].schema['x-svc-error-codes'];
    expect(codes).toEqual(expect.arrayContaining(['VALIDATION_FAILED', 'INVALID_AGENT_NAME', 'TERMS_NOT_ACCEPTED']));
    expect(doc.paths['/v1/register'].post.requestBody.content['application/json'].schema.required).toContain('agree_to_terms');
  });

  test('success statuses are the ones the routes answer; domain errors are listed with their codes', async () => {
    const ok = (path: string, method: string) => Object.keys(doc.paths[path][method].responses).filter((s) => s < '400').sort();
    expect(ok('/v1/register', 'post')).toEqual(['201']);
    expect(ok('/v1/feedback', 'post')).toEqual(['201']);
    expect(ok('/v1/blobs', 'put')).toEqual(['200', '201']);
    expect(ok('/v1/blobs/{blob_id}', 'delete')).toEqual(['204']);
    expect(ok('/v1/blobs/{blob_id}/parse', 'post')).toEqual(['200', '202']);
    expect(ok('/v1/billing/packs/checkout', 'post')).toEqual([]);
    expect(ok('/v1/me', 'get')).toEqual(['200']);
    // A body of optional fields may be left out (a parse request has no body).
    expect(doc.paths['/v1/blobs/{blob_id}/parse'].post.requestBody.required).toBe(false);
    expect(doc.paths['/v1/register'].post.requestBody.required).toBe(true);
    const codes = (path: string, method: string, status: number) => doc.paths[path][method].responses[String(status)].content['application/json'].schema['x-svc-error-codes'];
    expect(codes('/v1/search', 'get', 402)).toEqual(['INSUFFICIENT_CREDITS']);
    expect(codes('/v1/search', 'get', 429)).toEqual(['SEARCH_CALLS_LIMIT']);
    expect(codes('/v1/browse', 'post', 422)).toEqual(expect.arrayContaining(['BROWSE_ROBOTS_DISALLOW', 'INVALID_URL']));
    expect(codes('/v1/billing/packs/checkout', 'post', 410)).toEqual(['PACK_CHECKOUT_RETIRED']);
    // What the document says is what the route answers: a registration is 201, a retired pack 410.
    expect((await t.request('POST', '/v1/register', { body: { agent_name: 'openapi-201', owner_identifier: 'o', agree_to_terms: true } })).status).toBe(201);
    const a = await t.registerAgent();
    const pack = await t.request('POST', '/v1/billing/packs/checkout', { token: a.apiKey, body: {} });
    expect([pack.status, pack.body.error_code]).toEqual([410, 'PACK_CHECKOUT_RETIRED']);
  });

  test('documents the designs of items the spec leaves "not shown"', () => {
    expect(doc['x-svc-designs'].length).toBeGreaterThan(3);
    for (const d of doc['x-svc-designs']) expect(Object.keys(d).sort()).toEqual(['design', 'see', 'spec_item']);
  });

  test('every operation carries what the reference page shows: authentication, error codes per status, an example of each code', () => {
    let n = 0;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        n++;
        const where = `${method} ${path}`;
        expect(op.description, where).toContain('**Authentication:**');
        expect(Object.keys(op['x-svc-error-codes']).length, where).toBeGreaterThan(0);
        for (const [status, codes] of Object.entries<string[]>(op['x-svc-error-codes'])) {
          const r = op.responses[status];
          expect(r.content['application/json'].schema['x-svc-error-codes'], `${where} ${status}`).toEqual(codes);
          for (const code of codes) {
            expect(op.description, where).toContain(`\`${code}\``);
            expect(r.description, `${where} ${status}`).toContain(code);
          }
          // One example per code, a body of that code (a body of the route's own has the route's schema only).
          const examples = r.content['application/json'].examples;
          if (OWN_ERROR_BODIES.includes(`${method} ${path} ${status}`)) continue;
          expect(Object.keys(examples), `${where} ${status}`).toEqual(codes);
          for (const code of codes) expect(examples[code].value.error_code).toBe(code);
        }
      }
    }
    expect(n).toBeGreaterThan(15);
  });

  test('names its authentication schemes and links the designs page', () => {
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.securitySchemes.adminKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Admin-Key' });
    for (const s of Object.values<any>(doc.components.securitySchemes)) expect(s.description.length).toBeGreaterThan(20);
    expect(doc.paths['/admin/trust/parity-check/latest'].get.security).toEqual([{ adminKey: [] }]);
    expect(doc.info.description).toContain('(/docs/designs)');
  });

  test('the guide\'s requests are examples of the operations they call', () => {
    const register = doc.paths['/v1/register'].post.requestBody.content['application/json'].examples['start: register'];
    expect(register.value).toMatchObject({ agent_name: 'my-agent', agree_to_terms: true });
    const key = doc.paths['/v1/memory/{key}'].put.parameters.find((p: any) => p.in === 'path' && p.name === 'key');
    expect(key.example).toBe('project.notes');
    // A placeholder (<agent_id>) is not given as an example of a checked value.
    for (const item of Object.values<any>(doc.paths)) {
      for (const op of Object.values<any>(item)) for (const p of op.parameters ?? []) expect(String(p.example ?? '')).not.toMatch(/^<.*>$/);
    }
  });

  test('GET /docs is the reference page (Swagger UI over this document)', async () => {
    const res = await t.request('GET', '/docs');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.raw).toContain('<div id="swagger-ui"></div>');
    expect(res.raw).toMatch(/<script src="\/docs\/static\/swagger-ui-bundle\.js"/);
    expect((await t.request('GET', '/docs/json')).body).toEqual(doc);
  });
});
