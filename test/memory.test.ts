import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { tierOf } from '../src/lib/tiers';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

// The free tier's monthly write cap comes from the tier table (null: no cap, credit-metered).
const cap = tierOf('free').memoryWritesPerMonth;
const remainingAfter = (writes: number) => (cap === null ? null : cap - writes);

let t: TestApp;
let a: RegisteredAgent;
let b: RegisteredAgent;
beforeAll(async () => {
  t = await startTestApp({ env: { SVC_EMBEDDINGS: 'none' } });
  a = await t.registerAgent();
  b = await t.registerAgent();
});
afterAll(async () => t?.close());

const put = (key: string, body: unknown, token = a.apiKey) => t.request('PUT', `/v1/memory/${key}`, { token, body });
const get = (key: string, token = a.apiKey) => t.request('GET', `/v1/memory/${key}`, { token });

describe('PUT and GET /v1/memory/{key}', () => {
  test('stores any JSON and reads it back with provenance, content_trust and usage', async () => {
    const value = { editor: 'vim', nested: { list: [1, 'two', null, true] }, 'é': 'ünïcode ✓' };
    const res = await put('prefs.editor', { value, importance: 'high', source: 'chat:42', confidence: 0.8, derived_from: { start_version: 1, end_version: 3 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', key: 'prefs.editor', value, version: 1 });
    expect(res.body.usage).toMatchObject({ ops_this_month: 1, ops_remaining: remainingAfter(1), storage_limit_bytes: 5 * 1024 * 1024, over_limit: false });
    expect(res.body.usage.storage_bytes).toBe(Buffer.byteLength(JSON.stringify(value)));

    const g = await get('prefs.editor');
    expect(g.status).toBe(200);
    expect(g.body).toMatchObject({
      status: 'success', key: 'prefs.editor', value, importance: 'high', source: 'chat:42', confidence: 0.8,
      content_trust: 'untrusted_data', derived_from: { start_version: 1, end_version: 3 }, version: 1,
    });
    expect(g.body.usage.ops_this_month).toBe(1); // reads are not metered
  });

  test('GET answers the stored JSON text as is: valid JSON, exact round trip of escapes, unicode and numbers', async () => {
    const value = { q: 'say "hi"\\ \n\t\u0000 </script>', e: '\u2028\u2029 😀 é', n: [0, -1.5, 1e21, 123456789.123], deep: [[[{ a: null }]]], empty: {} };
    expect((await put('raw.json', { value })).status).toBe(200);
    const res = await get('raw.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const text = res.raw;
    const body = JSON.parse(text);
    expect(body.value).toEqual(value);
    expect(text).toContain(`"value":${JSON.stringify(value)},`);
    expect(Object.keys(body)).toEqual(['status', 'key', 'value', 'importance', 'source', 'confidence', 'derived_from', 'version', 'created_at', 'updated_at', 'expires_at', 'content_trust', 'usage']);
  });

  test('defaults: importance normal, confidence 1.0, source null; scalars and null are values too', async () => {
    for (const value of ['text', 42, false, null, [1, 2]]) {
      expect((await put('scalar', { value })).status).toBe(200);
      const g = await get('scalar');
      expect(g.body.value).toEqual(value);
      expect(g.body).toMatchObject({ importance: 'normal', confidence: 1, source: null });
    }
  });

  test('latest value wins; versions grow; storage counts latest live bytes only', async () => {
    const s0 = (await t.request('GET', '/v1/memory/stats', { token: b.apiKey })).body.storage_bytes;
    expect(s0).toBe(0);
    await put('k', { value: 'x'.repeat(100) }, b.apiKey);
    const r = await put('k', { value: 'y' }, b.apiKey);
    expect(r.body.version).toBe(2);
    expect((await get('k', b.apiKey)).body.value).toBe('y');
    const stats = await t.request('GET', '/v1/memory/stats', { token: b.apiKey });
    expect(stats.body).toMatchObject({ status: 'success', tier: 'free', ops_this_month: 2, ops_remaining: remainingAfter(2), storage_bytes: 3, storage_limit_bytes: 5242880, over_limit: false });
  });

  test('a 512 KB serialized value is accepted; one byte more is 413 MEMORY_VALUE_TOO_LARGE', async () => {
    const max = 512 * 1024;
    const ok = await put('big', { value: 'a'.repeat(max - 2) }); // the quotes make it exactly 512 KB
    expect(ok.status).toBe(200);
    expect(ok.body.usage.storage_bytes).toBeGreaterThanOrEqual(max);
    const over = await put('big2', { value: 'a'.repeat(max - 1) });
    expect(over.status).toBe(413);
    expect(over.body.error_code).toBe('MEMORY_VALUE_TOO_LARGE');
    expect(over.body.size_bytes).toBe(max + 1);
    expect((await get('big2')).status).toBe(404);
  });

  test('a body past the memory route\'s body limit (4 MiB) is also 413 MEMORY_VALUE_TOO_LARGE, nothing written', async () => {
    const res = await put('huge', { value: 'a'.repeat(5 * 1024 * 1024) });
    expect(res.status).toBe(413);
    expect(res.body.error_code).toBe('MEMORY_VALUE_TOO_LARGE');
    expect(res.body.message).toMatch(/524288 bytes/);
    expect((await get('huge')).status).toBe(404);
  });

  test('size is UTF-8 bytes of the compact serialization, not characters or body bytes', async () => {
    const max = 512 * 1024;
    // 'é' is 2 bytes: (max - 2) / 2 of them fit exactly, one more does not.
    expect((await put('utf8', { value: 'é'.repeat((max - 2) / 2) })).status).toBe(200);
    expect((await put('utf8', { value: 'é'.repeat((max - 2) / 2 + 1) })).body.error_code).toBe('MEMORY_VALUE_TOO_LARGE');
    // Escaped in the body (6 bytes each) and padded with whitespace: the body is ~3 MB, the value fits.
    const body = `{ "value" : "${'\\u0041'.repeat(max - 2)}"   ${' '.repeat(1000)} }`;
    const escaped = await t.request('PUT', '/v1/memory/escaped', { token: a.apiKey, body, headers: { 'content-type': 'application/json' } });
    expect(escaped.status).toBe(200);
    await t.request('DELETE', '/v1/memory/escaped', { token: a.apiKey });
    await t.request('DELETE', '/v1/memory/big', { token: a.apiKey });
    await t.request('DELETE', '/v1/memory/utf8', { token: a.apiKey });
  });

  test.each([
    ['x'.repeat(129)], ['has space'], ['a%2Fb'], ['semi;colon'], ['bang!'], ['%C3%A9'],
  ])('bad key %j → 422 MEMORY_KEY_INVALID on PUT, GET and DELETE', async (key) => {
    for (const method of ['PUT', 'GET', 'DELETE'] as const) {
      const res = await t.request(method, `/v1/memory/${key}`, { token: a.apiKey, ...(method === 'PUT' ? { body: { value: 1 } } : {}) });
      expect(res.status).toBe(422);
      expect(res.body.error_code).toBe('MEMORY_KEY_INVALID');
    }
  });

  test('keys of 1 and 128 characters from the whole charset are fine', async () => {
    expect((await put('k'.repeat(128), { value: 1 })).status).toBe(200);
    expect((await put('Az09-_.:', { value: 1 })).status).toBe(200);
    expect((await get('Az09-_.:')).body.value).toBe(1);
    expect((await put('z', { value: 1 })).status).toBe(200);
  });

  test.each([
    [{}, 'VALIDATION_FAILED'],
    [{ value: 1, ttl: 0 }, 'VALIDATION_FAILED'],
    [{ value: 1, ttl: -5 }, 'VALIDATION_FAILED'],
    [{ value: 1, ttl: 1.5 }, 'VALIDATION_FAILED'],
    [{ value: 1, importance: 'urgent' }, 'VALIDATION_FAILED'],
    [{ value: 1, source: 's'.repeat(256) }, 'VALIDATION_FAILED'],
    [{ value: 1, confidence: 1.01 }, 'VALIDATION_FAILED'],
    [{ value: 1, confidence: -0.1 }, 'VALIDATION_FAILED'],
    [{ value: 1, derived_from: { start_version: 0, end_version: 1 } }, 'MEMORY_DERIVED_FROM_INVALID'],
    [{ value: 1, derived_from: { start_version: 3, end_version: 2 } }, 'MEMORY_DERIVED_FROM_INVALID'],
    [{ value: 1, derived_from: { start_version: 1 } }, 'MEMORY_DERIVED_FROM_INVALID'],
    [{ value: 1, derived_from: { start_version: 1.5, end_version: 2 } }, 'MEMORY_DERIVED_FROM_INVALID'],
    [{ value: 1, derived_from: 'v1-v2' }, 'MEMORY_DERIVED_FROM_INVALID'],
    [{ value: 1, derived_from: { start_version: 1, end_version: 2 ** 53 } }, 'MEMORY_DERIVED_FROM_INVALID'],
    // JSON types are exact (no coercion): null is not a confidence, "10" is not a ttl, 5 is not a source.
    [{ value: 1, confidence: null }, 'VALIDATION_FAILED'],
    [{ value: 1, ttl: '10' }, 'VALIDATION_FAILED'],
    [{ value: 1, source: 5 }, 'VALIDATION_FAILED'],
    [{ value: 1, source: ['a'] }, 'VALIDATION_FAILED'],
  ])('invalid body %j → 422 %s, and nothing is written', async (body, code) => {
    const before = (await t.request('GET', '/v1/memory/stats', { token: a.apiKey })).body.ops_this_month;
    const res = await put('invalid-body', body);
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe(code);
    expect((await get('invalid-body')).status).toBe(404);
    expect((await t.request('GET', '/v1/memory/stats', { token: a.apiKey })).body.ops_this_month).toBe(before);
  });

  test('boundaries accepted: source of 255, confidence 0 and 1, derived_from start = end', async () => {
    expect((await put('bounds', { value: 1, source: 's'.repeat(255), confidence: 0, derived_from: { start_version: 2, end_version: 2 } })).status).toBe(200);
    expect((await put('bounds', { value: 1, confidence: 1 })).status).toBe(200);
  });

  test('non-JSON body → 400 INVALID_JSON, never 500', async () => {
    const res = await t.request('PUT', '/v1/memory/nj', { token: a.apiKey, body: '{"value": ', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('INVALID_JSON');
  });
});

describe('DELETE and tombstones', () => {
  test('delete tombstones: GET 404, storage released; re-PUT brings it back as a new version', async () => {
    await put('tomb', { value: 'first' }, b.apiKey);
    const before = (await t.request('GET', '/v1/memory/stats', { token: b.apiKey })).body.storage_bytes;
    const del = await t.request('DELETE', '/v1/memory/tomb', { token: b.apiKey });
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ status: 'success', key: 'tomb', deleted: true });
    expect(del.body.usage.storage_bytes).toBe(before - 7);
    const g = await get('tomb', b.apiKey);
    expect(g.status).toBe(404);
    expect(g.body.error_code).toBe('MEMORY_KEY_NOT_FOUND');
    expect((await t.request('DELETE', '/v1/memory/tomb', { token: b.apiKey })).body.error_code).toBe('MEMORY_KEY_NOT_FOUND');
    const again = await put('tomb', { value: 'second' }, b.apiKey);
    expect(again.body.version).toBe(3); // 1 put, 2 tombstone, 3 put
    expect((await get('tomb', b.apiKey)).body.value).toBe('second');
  });

  test('delete is not metered against the write cap', async () => {
    await put('dm', { value: 1 }, b.apiKey);
    const s1 = (await t.request('GET', '/v1/memory/stats', { token: b.apiKey })).body;
    await t.request('DELETE', '/v1/memory/dm', { token: b.apiKey });
    const s2 = (await t.request('GET', '/v1/memory/stats', { token: b.apiKey })).body;
    expect(s2.ops_this_month).toBe(s1.ops_this_month);
    expect(s2.ops_remaining).toBe(s1.ops_remaining);
  });
});

describe('security', () => {
  test.each([
    ['GET', '/v1/memory/x'], ['PUT', '/v1/memory/x'], ['DELETE', '/v1/memory/x'], ['GET', '/v1/memory'],
    ['GET', '/v1/memory/stats'], ['GET', '/v1/memory/context'], ['GET', '/v1/memory/search?q=hi'],
  ])('%s %s without a key, or with a wrong key → 401 INVALID_API_KEY', async (method, path) => {
    const body = method === 'PUT' ? { value: 1 } : undefined;
    const none = await t.request(method as 'GET', path, { body });
    expect(none.status).toBe(401);
    expect(none.body.error_code).toBe('INVALID_API_KEY');
    const wrong = await t.request(method as 'GET', path, { body, token: 'svc_' + 'x'.repeat(43) });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error_code).toBe('INVALID_API_KEY');
  });

  test("another agent's key looks exactly like a missing one", async () => {
    await put('secret', { value: 'a-only' });
    const foreign = await get('secret', b.apiKey);
    const missing = await get('never-written', b.apiKey);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error_code).toBe(missing.body.error_code);
    expect(foreign.raw.replaceAll('secret', 'K')).toBe(missing.raw.replaceAll('never-written', 'K'));
    expect((await t.request('DELETE', '/v1/memory/secret', { token: b.apiKey })).status).toBe(404);
    const list = await t.request('GET', '/v1/memory?prefix=secret', { token: b.apiKey });
    expect(list.body.total).toBe(0);
    // b writing the same key makes b's own value; a's is untouched.
    await put('secret', { value: 'b-only' }, b.apiKey);
    expect((await get('secret')).body.value).toBe('a-only');
    expect((await get('secret', b.apiKey)).body.value).toBe('b-only');
  });
});
