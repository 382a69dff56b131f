import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

let t: TestApp;
let a: RegisteredAgent;
beforeAll(async () => {
  t = await startTestApp({ env: { SVC_EMBEDDINGS: 'none', SVC_MEMORY_SWEEP_INTERVAL_SECONDS: '0' } });
  a = await t.registerAgent();
});
afterAll(async () => t?.close());

const put = (key: string, body: unknown, token = a.apiKey) => t.request('PUT', `/v1/memory/${key}`, { token, body });
const req = (path: string, token = a.apiKey) => t.request('GET', path, { token });

describe('GET /v1/memory (list)', () => {
  beforeAll(async () => {
    for (let i = 1; i <= 7; i++) await put(`proj.alpha.${i}`, { value: { n: i }, importance: i % 2 ? 'high' : 'low', source: `s${i}` });
    await put('proj_beta', { value: 'underscore is literal in prefixes' });
    await put('PROJ.upper', { value: 'case matters' });
  });

  test('metadata only, sorted by key, with total, page and per_page', async () => {
    const res = await req('/v1/memory?prefix=proj.alpha.&per_page=3&page=2');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'success', total: 7, page: 2, per_page: 3 });
    expect(res.body.keys.map((k: any) => k.key)).toEqual(['proj.alpha.4', 'proj.alpha.5', 'proj.alpha.6']);
    const item = res.body.keys[0];
    expect(item).toMatchObject({ key: 'proj.alpha.4', size_bytes: 7, importance: 'low', source: 's4', confidence: 1 });
    expect(item.created_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(item.updated_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(item).not.toHaveProperty('value');
    expect(res.raw).not.toContain('"n":4');
  });

  test('keys sort in code-point order on both engines, whatever the PostgreSQL collation', async () => {
    const b = await t.registerAgent();
    const keys = ['a', '_x', 'A', '-x', 'B', '.x', '0', 'Z9', 'a_b', 'ab', 'a.b', 'a-b'];
    for (const k of keys) expect((await put(k, { value: 1 }, b.apiKey)).status).toBe(200);
    const listed = (await req('/v1/memory', b.apiKey)).body.keys.map((k: any) => k.key);
    expect(listed).toEqual([...keys].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
  });

  test('defaults page 1, per_page 50; importance filters; prefix is literal and case-sensitive', async () => {
    const all = await req('/v1/memory');
    expect(all.body).toMatchObject({ page: 1, per_page: 50, total: 9 });
    expect((await req('/v1/memory?importance=high')).body.total).toBe(4);
    expect((await req('/v1/memory?prefix=proj_')).body.keys.map((k: any) => k.key)).toEqual(['proj_beta']);
    expect((await req('/v1/memory?prefix=PROJ')).body.total).toBe(1);
    expect((await req('/v1/memory?prefix=proj.alpha.&page=9')).body.keys).toEqual([]);
  });

  test.each([
    ['per_page=0', 'VALIDATION_FAILED'], ['per_page=101', 'VALIDATION_FAILED'], ['page=0', 'VALIDATION_FAILED'],
    ['importance=urgent', 'MEMORY_KEY_INVALID'], ['prefix=a%2Fb', 'MEMORY_KEY_INVALID'],
  ])('%s → 422 %s', async (qs, code) => {
    const res = await req(`/v1/memory?${qs}`);
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe(code);
  });

  test('per_page 1 and 100 are accepted', async () => {
    expect((await req('/v1/memory?per_page=1')).body.keys).toHaveLength(1);
    expect((await req('/v1/memory?per_page=100')).status).toBe(200);
  });
});

describe('GET /v1/memory/context', () => {
  let c: RegisteredAgent;
  beforeAll(async () => {
    c = await t.registerAgent();
    const seq: [string, string][] = [['n1', 'normal'], ['l1', 'low'], ['c1', 'critical'], ['h1', 'high'], ['n2', 'normal'], ['c2', 'critical']];
    for (const [key, importance] of seq) {
      await put(key, { value: key, importance }, c.apiKey);
      t.clock.advanceSeconds(1);
    }
  });

  test('ranked by importance, then most recent first, with values and content_trust', async () => {
    const res = await req('/v1/memory/context', c.apiKey);
    expect(res.status).toBe(200);
    expect(res.body.memories.map((m: any) => m.key)).toEqual(['c2', 'c1', 'h1', 'n2', 'n1', 'l1']);
    expect(res.body.total_returned).toBe(6);
    expect(res.body.memories[0]).toMatchObject({ key: 'c2', value: 'c2', importance: 'critical', content_trust: 'untrusted_data' });
  });

  test('limit and importance floor', async () => {
    expect((await req('/v1/memory/context?limit=2', c.apiKey)).body.memories.map((m: any) => m.key)).toEqual(['c2', 'c1']);
    expect((await req('/v1/memory/context?importance=high', c.apiKey)).body.memories.map((m: any) => m.key)).toEqual(['c2', 'c1', 'h1']);
    // Updating an entry makes it the most recent of its rank.
    await put('n1', { value: 'n1 again', importance: 'normal' }, c.apiKey);
    expect((await req('/v1/memory/context?importance=normal', c.apiKey)).body.memories.map((m: any) => m.key)).toEqual(['c2', 'c1', 'h1', 'n1', 'n2']);
  });

  test.each([['limit=0', 'VALIDATION_FAILED'], ['limit=51', 'VALIDATION_FAILED'], ['importance=bogus', 'MEMORY_KEY_INVALID']])(
    '%s → 422 %s', async (qs, code) => {
      const res = await req(`/v1/memory/context?${qs}`, c.apiKey);
      expect(res.status).toBe(422);
      expect(res.body.error_code).toBe(code);
    });

  test('limit 50 is accepted', async () => {
    expect((await req('/v1/memory/context?limit=50', c.apiKey)).status).toBe(200);
  });

  test('the context quirk: a key named "context" (or stats, search) is stored but GET runs the fixed route', async () => {
    const d = await t.registerAgent();
    for (const key of ['context', 'stats', 'search']) {
      expect((await put(key, { value: `my ${key}` }, d.apiKey)).status).toBe(200);
    }
    const ctx = await req('/v1/memory/context', d.apiKey);
    expect(ctx.body).toHaveProperty('memories'); // the context handler, not the key
    expect(ctx.body.memories.map((m: any) => m.value).sort()).toEqual(['my context', 'my search', 'my stats']);
    expect((await req('/v1/memory/stats', d.apiKey)).body).toHaveProperty('storage_limit_bytes');
    expect((await req('/v1/memory/search', d.apiKey)).body.error_code).toBe('MEMORY_QUERY_REQUIRED');
    expect((await req('/v1/memory?prefix=context', d.apiKey)).body.keys.map((k: any) => k.key)).toEqual(['context']);
    expect((await t.request('DELETE', '/v1/memory/context', { token: d.apiKey })).status).toBe(200);
  });
});

describe('TTL with the injected clock', () => {
  test('an expired entry reads as absent everywhere, its bytes leave storage, and the sweeper removes it', async () => {
    const e = await t.registerAgent();
    await put('short', { value: 'soon gone', ttl: 60, importance: 'critical' }, e.apiKey);
    await put('keep', { value: 'stays' }, e.apiKey);
    const g = await req('/v1/memory/short', e.apiKey);
    expect(g.status).toBe(200);
    expect(new Date(g.body.expires_at).getTime()).toBe(t.clock.now() + 60_000);

    t.clock.advanceSeconds(59);
    expect((await req('/v1/memory/short', e.apiKey)).status).toBe(200);
    t.clock.advanceSeconds(1);
    const gone = await req('/v1/memory/short', e.apiKey);
    expect(gone.status).toBe(404);
    expect(gone.body.error_code).toBe('MEMORY_KEY_NOT_FOUND');
    expect((await req('/v1/memory', e.apiKey)).body.keys.map((k: any) => k.key)).toEqual(['keep']);
    expect((await req('/v1/memory/context', e.apiKey)).body.memories.map((m: any) => m.key)).toEqual(['keep']);
    expect((await req('/v1/memory/stats', e.apiKey)).body.storage_bytes).toBe(7); // "stays" only, before any sweep
    expect((await t.request('DELETE', '/v1/memory/short', { token: e.apiKey })).status).toBe(404);

    // Re-PUT of an expired key starts a fresh live entry.
    await put('short', { value: 'back', ttl: 10 }, e.apiKey);
    expect((await req('/v1/memory/short', e.apiKey)).body.value).toBe('back');
    expect((await req('/v1/memory/stats', e.apiKey)).body.storage_bytes).toBe(7 + 6);
  });
});
