import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { RegisterBody } from '../src/modules/identity/schemas';
import { startTestApp, type TestApp } from './helpers/harness';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const TOOLS = ['search', 'register', 'feedback', 'browse', 'commons', 'memory', 'blob', 'passport', 'trust', 'blob-upload', 'blob-download',
  'blob-list', 'blob-meta', 'blob-delete', 'blob-signed-url', 'blob-parse', 'blob-parse-status', 'blob-search', 'reputation-dispute'];
const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const raw = (path: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url: path, headers });

describe('tool definition files and manifest', () => {
  test('the manifest lists every spec tool and each hash is the SHA-256 of the bytes served', async () => {
    const res = await raw('/v1/mcp/manifest');
    expect(res.statusCode).toBe(200);
    const m = JSON.parse(res.body);
    expect(Object.keys(m.tools).sort()).toEqual(TOOLS.map((x) => `svc-${x}`).sort());
    for (const [id, hash] of Object.entries<string>(m.tools)) {
      const file = await raw(`/mcp/v1/${id}.json`);
      expect(file.statusCode, id).toBe(200);
      expect(sha256(file.rawPayload), id).toBe(hash);
      const def = JSON.parse(file.body);
      expect(def.name).toBe(`svc_${id.slice(4).replace(/-/g, '_')}`);
      expect(def.inputSchema.type).toBe('object');
    }
  });

  test('manifest: Cache-Control 3600 s, stable ETag, 304 on If-None-Match (also in a list and weak form)', async () => {
    const a = await raw('/v1/mcp/manifest');
    const b = await raw('/v1/mcp/manifest');
    expect(a.headers['cache-control']).toContain('max-age=3600');
    expect(a.headers.etag).toBeTruthy();
    expect(a.headers.etag).toBe(b.headers.etag);
    expect(a.headers.etag).toBe(`"${sha256(a.rawPayload)}"`);
    const c = await raw('/v1/mcp/manifest', { 'if-none-match': a.headers.etag as string });
    expect(c.statusCode).toBe(304);
    expect(c.body).toBe('');
    expect((await raw('/v1/mcp/manifest', { 'if-none-match': `"other", W/${a.headers.etag}` })).statusCode).toBe(304);
    expect((await raw('/v1/mcp/manifest', { 'if-none-match': '"something-else"' })).statusCode).toBe(200);
  });

  test('tool files have an ETag too and answer 304', async () => {
    const a = await raw('/mcp/v1/svc-register.json');
    expect(a.headers.etag).toBe(`"${sha256(a.rawPayload)}"`);
    expect((await raw('/mcp/v1/svc-register.json', { 'if-none-match': a.headers.etag as string })).statusCode).toBe(304);
  });

  test('legacy /mcp/svc-*.json serves the same bytes with X-Svc-Deprecation', async () => {
    for (const id of ['svc-memory', 'svc-blob-parse-status']) {
      const v1 = await raw(`/mcp/v1/${id}.json`);
      const legacy = await raw(`/mcp/${id}.json`);
      expect(legacy.statusCode).toBe(200);
      expect(legacy.rawPayload.equals(v1.rawPayload)).toBe(true);
      expect(legacy.headers['x-svc-deprecation']).toMatch(/mcp\/v1/);
      expect(v1.headers['x-svc-deprecation']).toBeUndefined();
    }
  });

  test('unknown or malformed tool file → 404 TOOL_NOT_FOUND', async () => {
    for (const p of ['/mcp/v1/svc-nope.json', '/mcp/v1/other.json', '/mcp/svc-nope.json', '/mcp/v1/SVC-memory.json']) {
      const res = await t.request('GET', p);
      expect(res.status, p).toBe(404);
      expect(res.body.error_code).toBe('TOOL_NOT_FOUND');
    }
  });

  test('input schemas are derived from the route schemas', async () => {
    const reg = JSON.parse((await raw('/mcp/v1/svc-register.json')).body);
    expect(reg.inputSchema.properties).toEqual(JSON.parse(JSON.stringify(RegisterBody.properties)));
    expect(reg.inputSchema.required.sort()).toEqual([...RegisterBody.required].sort());
    expect(reg.actions[0]).toMatchObject({ method: 'POST', path: '/v1/register', auth: 'none', served: true });

    const passport = JSON.parse((await raw('/mcp/v1/svc-passport.json')).body);
    expect(passport.inputSchema.required).toEqual(['action']);
    // The schema offers the actions this instance serves; the file still lists every action, with `served`.
    expect(passport.inputSchema.properties.action.enum).toEqual(['me', 'get', 'describe', 'self_report', 'challenge', 'verify', 'ephemeral', 'rotate']);
    expect(passport.actions.find((x: { action: string }) => x.action === 'describe')).toMatchObject({ served: true });
    expect(passport.inputSchema.properties.signature.minLength).toBe(1);
    const trust = JSON.parse((await raw('/mcp/v1/svc-trust.json')).body);
    expect(trust.inputSchema.properties.action.enum).toContain('directory');
    expect(trust.actions.find((x: { action: string }) => x.action === 'directory')).toMatchObject({ method: 'GET', path: '/v1/agents', auth: 'none', served: true });
    expect(trust.inputSchema.properties.cursor).toBeTruthy();
    expect(trust.inputSchema.properties.bridge_only.type).toBe('boolean');
    expect(passport.inputSchema.properties.agent_id.description).toMatch(/required by: get, challenge, verify/);

    const upload = JSON.parse((await raw('/mcp/v1/svc-blob-upload.json')).body);
    expect(upload.inputSchema.required).toContain('content_base64');
    expect(upload.inputSchema.properties.content_base64).toBeTruthy();
  });
});
