/**
 * Input the schemas let through but the stores cannot keep (src/http/input-guard.ts), and URLs that
 * fail before routing (frameworkErrors): each is refused with the API's error object and nothing is
 * written. On the engine under test; NUL is the PostgreSQL case, but both engines answer alike.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

let t: TestApp;
let a: RegisteredAgent;
beforeAll(async () => {
  t = await startTestApp();
  a = await t.registerAgent();
});
afterAll(async () => t?.close());

const raw = (method: 'PUT' | 'POST', url: string, payload: string) =>
  t.app.inject({ method, url, payload, headers: { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/json' } })
    .then((r) => ({ status: r.statusCode, body: JSON.parse(r.body) }));

describe('numbers out of the double range', () => {
  test('a JSON number that parses to Infinity is refused in its field, and nothing is stored', async () => {
    for (const payload of ['{"value":{"n":1e309}}', `{"value":[1,${'9'.repeat(400)}]}`, '{"value":-1e999}']) {
      const r = await raw('PUT', '/v1/memory/inf.key', payload);
      expect(r, payload.slice(0, 30)).toMatchObject({ status: 422, body: { error_code: 'VALIDATION_FAILED', field: 'body.value' } });
      expect(r.body.message).toMatch(/finite/);
    }
    expect((await t.request('GET', '/v1/memory/inf.key', { token: a.apiKey })).status).toBe(404);
  });

  test('large but finite numbers and exponent-looking text pass unchanged', async () => {
    const r = await raw('PUT', '/v1/memory/big.key', '{"value":{"n":1e308,"m":-2.5e-300,"s":"1e999 is text"}}');
    expect(r.status).toBe(200);
    expect((await t.request('GET', '/v1/memory/big.key', { token: a.apiKey })).body.value).toEqual({ n: 1e308, m: -2.5e-300, s: '1e999 is text' });
  });

  test('a query integer of 1e309 (Infinity after coercion) is refused with its field, not run as SQL', async () => {
    for (const url of ['/v1/memory?page=1e309', '/v1/memory?per_page=1e309', '/v1/memory/context?limit=1e309', '/v1/me/activity?limit=1e309']) {
      const r = await t.request('GET', url, { token: a.apiKey });
      expect(r.status, url).toBe(422);
      expect(r.body.field, url).toBe(`querystring.${url.split('?')[1].split('=')[0]}`);
    }
  });
});

describe('nesting depth', () => {
  test('a body nested deeper than 1000 levels is refused before anything runs; 999 levels in a value are kept', async () => {
    const nested = (d: number) => `${'['.repeat(d)}"leaf"${']'.repeat(d)}`;
    const deep = await raw('PUT', '/v1/memory/deep.key', `{"value":${nested(5000)}}`);
    expect(deep).toMatchObject({ status: 422, body: { error_code: 'VALIDATION_FAILED', field: 'body' } });
    expect(deep.body.message).toMatch(/nested deeper than 1000/);
    expect((await t.request('GET', '/v1/memory/deep.key', { token: a.apiKey })).status).toBe(404);
    const ok = await raw('PUT', '/v1/memory/deep.key', `{"value":${nested(999)}}`);
    expect(ok.status).toBe(200);
    const got = await t.request('GET', '/v1/memory/deep.key', { token: a.apiKey });
    expect(JSON.stringify(got.body.value)).toBe(nested(999));
  });
});

describe('NUL characters', () => {
  test('in a text field: refused with the route\'s code for that field, nothing stored', async () => {
    const put = await t.request('PUT', '/v1/memory/nul.key', { token: a.apiKey, body: { value: 1, source: 'a\u0000b' } });
    expect(put).toMatchObject({ status: 422, body: { error_code: 'VALIDATION_FAILED', field: 'body.source' } });
    expect((await t.request('GET', '/v1/memory/nul.key', { token: a.apiKey })).status).toBe(404);
    const fb = await t.request('POST', '/v1/feedback', { token: a.apiKey, body: { ref_type: 'memory_key', ref_id: 'x\u0000', signal: 'helpful' } });
    expect(fb).toMatchObject({ status: 422, body: { error_code: 'INVALID_REF_ID', field: 'body.ref_id' } });
    expect(fb.body.message).toMatch(/NUL/);
  });

  test('inside an arbitrary JSON value: kept, and read back exactly', async () => {
    const value = { s: 'before\u0000after', list: ['\u0000'] };
    expect((await t.request('PUT', '/v1/memory/nul.value', { token: a.apiKey, body: { value } })).status).toBe(200);
    expect((await t.request('GET', '/v1/memory/nul.value', { token: a.apiKey })).body.value).toEqual(value);
  });

  test('in a path or query value: refused, never a 500', async () => {
    for (const url of ['/v1/browse/%00', '/v1/commons/entries/%00', '/v1/commons/entries?publisher=%00', '/v1/memory/search?q=a%00b']) {
      const r = await t.request('GET', url, { token: a.apiKey });
      expect(r.status, url).toBeGreaterThanOrEqual(400);
      expect(r.status, url).toBeLessThan(500);
      expect(typeof r.body.error_code, url).toBe('string');
    }
  });
});

describe('lone surrogates (JSON escapes such as \\ud800, which UTF-8 cannot encode)', () => {
  test('in a text field: refused with the route\'s code for that field; two of them no longer collapse into one stored text', async () => {
    for (const owner of ['\ud800', 'x\udc00y']) {
      const reg = await t.request('POST', '/v1/register', { body: { agent_name: 'surrogate-owner', owner_identifier: owner, agree_to_terms: true } });
      expect(reg).toMatchObject({ status: 422, body: { error_code: 'INVALID_OWNER_IDENTIFIER', field: 'body.owner_identifier' } });
      expect(reg.body.message).toMatch(/well-formed Unicode/);
    }
    const put = await t.request('PUT', '/v1/memory/surrogate.key', { token: a.apiKey, body: { value: 1, source: 'a\udbffb' } });
    expect(put).toMatchObject({ status: 422, body: { error_code: 'VALIDATION_FAILED', field: 'body.source' } });
    expect((await t.request('GET', '/v1/memory/surrogate.key', { token: a.apiKey })).status).toBe(404);
  });

  test('paired surrogates (an emoji) pass; inside an arbitrary JSON value a lone one is kept and read back exactly', async () => {
    const fine = await t.request('POST', '/v1/register', { body: { agent_name: 'emoji-owner', owner_identifier: 'me \ud83d\ude00', agree_to_terms: true } });
    expect(fine.status).toBe(201);
    expect((await t.request('GET', '/v1/me', { token: fine.body.api_key })).body.owner_identifier).toBe('me \u{1F600}');
    const value = { s: 'lone \ud800 here', list: ['\udfff'] };
    expect((await t.request('PUT', '/v1/memory/surrogate.value', { token: a.apiKey, body: { value } })).status).toBe(200);
    expect((await t.request('GET', '/v1/memory/surrogate.value', { token: a.apiKey })).body.value).toEqual(value);
  });
});

describe('"__proto__" and "constructor" keys', () => {
  test('inside an arbitrary JSON value (memory, commons): kept as plain keys and read back exactly', async () => {
    const raw = '{"value":{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}},"list":[{"__proto__":null}]}}';
    const put = await t.request('PUT', '/v1/memory/proto.value', { token: a.apiKey, body: raw });
    expect(put.status).toBe(200);
    const got = await t.request('GET', '/v1/memory/proto.value', { token: a.apiKey });
    expect(got.raw).toContain('"value":{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}},"list":[{"__proto__":null}]}');
    expect(({} as Record<string, unknown>).admin).toBeUndefined(); // nothing reached a prototype
  });

  test('anywhere else: refused as its field\'s invalid input (422), the value beside it notwithstanding', async () => {
    for (const raw of [
      '{"value":1,"__proto__":{"admin":true}}',
      '{"value":{"ok":1},"source":"s","importance":"high","confidence":1,"derived_from":{"__proto__":1}}',
    ]) {
      const r = await t.request('PUT', '/v1/memory/proto.refused', { token: a.apiKey, body: raw });
      expect(r.status, raw).toBe(422);
      expect(r.body.message, raw).toMatch(/"__proto__" is refused/);
    }
    const fb = await t.request('POST', '/v1/feedback', { token: a.apiKey, body: '{"ref_type":"memory_key","ref_id":"k","signal":"helpful","constructor":{"prototype":{}}}' });
    expect(fb.status).toBe(422);
    expect(fb.body.field).toBe('body.constructor');
    expect((await t.request('GET', '/v1/memory/proto.refused', { token: a.apiKey })).status).toBe(404);
  });
});

describe('URLs refused before routing', () => {
  test('a path segment over 8 KiB is 414 URI_TOO_LONG in the API format; a long memory key is still the route\'s 422', async () => {
    const long = await t.request('GET', `/v1/memory/${'k'.repeat(9000)}`, { token: a.apiKey });
    expect(long).toMatchObject({ status: 414, body: { error_code: 'URI_TOO_LONG' } });
    const key = await t.request('GET', `/v1/memory/${'k'.repeat(600)}`, { token: a.apiKey });
    expect(key).toMatchObject({ status: 422, body: { error_code: 'MEMORY_KEY_INVALID' } });
  });

  test('malformed percent-encoding in a path parameter is the route\'s answer for an invalid value of it', async () => {
    const key = await t.request('GET', '/v1/memory/%E0%A4%A', { token: a.apiKey });
    expect(key).toMatchObject({ status: 422, body: { error_code: 'MEMORY_KEY_INVALID', field: 'params.key' } });
    const put = await t.request('PUT', '/v1/memory/a%zz', { token: a.apiKey, body: { value: 1 } });
    expect(put).toMatchObject({ status: 422, body: { error_code: 'MEMORY_KEY_INVALID' } });
    // The spec: a malformed blob id is 404 BLOB_NOT_FOUND, on every blob route.
    for (const [method, path] of [['GET', '/v1/blobs/b_%zz'], ['GET', '/v1/blobs/%E0%A4%A/meta'], ['DELETE', '/v1/blobs/%zz'], ['POST', '/v1/blobs/%zz/parse']] as const) {
      const r = await t.request(method, path, { token: a.apiKey });
      expect(r, `${method} ${path}`).toMatchObject({ status: 404, body: { error_code: 'BLOB_NOT_FOUND' } });
    }
    const browse = await t.request('GET', '/v1/browse/%zz', { token: a.apiKey });
    expect(browse).toMatchObject({ status: 404, body: { error_code: 'BROWSE_NOT_FOUND', field: 'params.browse_id' } });
    expect(browse.body.message).toContain('percent-encoding');
    const parse = await t.request('GET', '/v1/blobs/b_0123456789abcdef/parse/%zz', { token: a.apiKey });
    expect(parse).toMatchObject({ status: 404, body: { error_code: 'BLOB_NOT_FOUND', field: 'params.parse_id' } });
    // A route that maps no code for the parameter: the generic 422, naming it.
    const card = await t.request('GET', '/v1/agents/%zz/agent-card', { token: a.apiKey });
    expect(card).toMatchObject({ status: 422, body: { error_code: 'VALIDATION_FAILED', field: 'params.agent_id' } });
    expect(card.body.message).toContain('percent-encoding');
  });

  test('malformed percent-encoding in a URL that matches no route is 400 BAD_REQUEST in the API format', async () => {
    const r = await t.request('GET', '/v1/nothing-here/%zz', { token: a.apiKey });
    expect(r).toMatchObject({ status: 400, body: { error_code: 'BAD_REQUEST' } });
  });
});

describe('an empty body under Content-Type: application/json', () => {
  test('a route that takes no body answers as without one (clients that send the header on every request); a route that takes one still refuses it', async () => {
    const send = (method: 'DELETE' | 'GET' | 'PUT', url: string) =>
      t.app.inject({ method, url, payload: '', headers: { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/json' } })
        .then((r) => ({ status: r.statusCode, body: JSON.parse(r.body) }));
    expect((await t.request('PUT', '/v1/memory/empty.body', { token: a.apiKey, body: { value: 1 } })).status).toBe(200);
    expect((await send('GET', '/v1/memory/empty.body')).status).toBe(200);
    expect((await send('DELETE', '/v1/memory/empty.body')).status).toBe(200); // was 400 INVALID_JSON
    expect((await t.request('GET', '/v1/memory/empty.body', { token: a.apiKey })).status).toBe(404);
    expect(await send('PUT', '/v1/memory/empty.body')).toMatchObject({ status: 400, body: { error_code: 'INVALID_JSON' } });
  });
});
