import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildApp, type App } from '../src/app';
import { loadConfig } from '../src/config';
import { ManualClock } from '../src/lib/clock';
import { createTestDatabase, type TestDatabase } from './helpers/engines';

/** Commons with the real local model. Built directly to move publishers to a paying tier. */
let tdb: TestDatabase;
let built: App;
let n = 0;
const clock = new ManualClock();

async function request(method: 'GET' | 'POST' | 'DELETE', url: string, token?: string, body?: unknown) {
  const res = await built.app.inject({
    method, url, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  });
  return { status: res.statusCode, body: res.json(), raw: res.body };
}
async function agent(tier = 'spark') {
  const r = await built.app.inject({ method: 'POST', url: '/v1/register', payload: { agent_name: `com-${process.pid}-${++n}`, owner_identifier: `o${n}`, agree_to_terms: true } });
  const { api_key, agent_id } = r.json();
  await built.database.db.updateTable('agents').set({ tier }).where('agent_id', '=', agent_id).execute();
  return { token: api_key as string, id: agent_id as string };
}

let pub: { token: string; id: string };
let reader: { token: string; id: string };
const ids: Record<string, string> = {};
beforeAll(async () => {
  tdb = await createTestDatabase();
  built = await buildApp({ clock, logger: false, config: loadConfig({ LOG_LEVEL: 'silent', PORT: '0', ...tdb.env, SVC_EMBEDDINGS: 'local', SVC_EMBEDDINGS_TIMEOUT_MS: '120000', SVC_MEMORY_INDEX_INTERVAL_MS: '600000', SVC_SEARCH_EMBED_WAIT_MS: '120000' }) });
  pub = await agent('spark');
  reader = await agent('free');
  const entries: [string, unknown, string[]][] = [
    ['howto.python.venv', 'Create a virtual environment with python -m venv .venv and activate it', ['python', 'how_to']],
    ['api.github.ratelimit', { api: 'GitHub REST', limit: '5000 requests per hour when authenticated' }, ['api']],
    ['recipe.pancakes', 'Mix flour, eggs and milk; fry in butter', []],
  ];
  for (const [key, value, tags] of entries) {
    const r = await request('POST', '/v1/commons/entries', pub.token, { key, value, tags, source: 'docs', confidence: 0.9 });
    expect(r.status).toBe(201);
    ids[key] = r.body.entry.entry_id;
    clock.advanceSeconds(1);
  }
}, 120_000);
afterAll(async () => {
  await built?.app.close();
  await tdb?.close();
});

describe('publish', () => {
  test('201 with the entry; free-tier agents need the capability', async () => {
    const r = await request('POST', '/v1/commons/entries', pub.token, { key: 'k', value: { a: 1 } });
    expect(r.status).toBe(201);
    expect(r.body.entry).toMatchObject({ key: 'k', value: { a: 1 }, tags: [], source: null, confidence: 1, publisher_id: pub.id, vouch_count: 0, content_trust: 'untrusted_data' });
    expect(r.body.entry.entry_id).toMatch(/^[0-9a-f-]{36}$/);
    const free = await request('POST', '/v1/commons/entries', reader.token, { key: 'k', value: 1 });
    expect(free.status).toBe(403);
    expect(free.body.error_code).toBe('COMMONS_PUBLISH_NOT_PERMITTED');
    expect(free.body.upgrade_url).toBeTruthy();
    await request('DELETE', `/v1/commons/entries/${r.body.entry.entry_id}`, pub.token);
  });

  test.each([
    [{ key: 'bad key', value: 1 }, 422, 'MEMORY_KEY_INVALID'],
    [{ value: 1 }, 422, 'MEMORY_KEY_INVALID'],
    [{ key: 'k' }, 422, 'VALIDATION_FAILED'],
    [{ key: 'k', value: 1, tags: ['UPPER'] }, 422, 'COMMONS_TAGS_INVALID'],
    [{ key: 'k', value: 1, tags: Array.from({ length: 11 }, (_, i) => `t${i}`) }, 422, 'COMMONS_TAGS_INVALID'],
    [{ key: 'k', value: 1, confidence: 2 }, 422, 'VALIDATION_FAILED'],
    [{ key: 'k', value: 'x'.repeat(512 * 1024 - 1) }, 413, 'COMMONS_VALUE_TOO_LARGE'],
  ])('%# invalid → %i %s', async (body, status, code) => {
    const r = await request('POST', '/v1/commons/entries', pub.token, body);
    expect(r.status).toBe(status);
    expect(r.body.error_code).toBe(code);
  });
});

describe('read', () => {
  test('list: newest first, any agent, filters by tag and publisher, content_trust', async () => {
    const r = await request('GET', '/v1/commons/entries', reader.token);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'success', total: 3, page: 1, per_page: 20, content_trust: 'untrusted_data' });
    expect(r.body.entries.map((e: any) => e.key)).toEqual(['recipe.pancakes', 'api.github.ratelimit', 'howto.python.venv']);
    expect(r.body.entries[0].content_trust).toBe('untrusted_data');
    expect((await request('GET', '/v1/commons/entries?tag=how_to', reader.token)).body.entries.map((e: any) => e.key)).toEqual(['howto.python.venv']);
    expect((await request('GET', '/v1/commons/entries?tag=how', reader.token)).body.total).toBe(0);
    expect((await request('GET', '/v1/commons/entries?tag=howxto', reader.token)).body.total).toBe(0); // '_' is not a wildcard
    expect((await request('GET', `/v1/commons/entries?publisher=${reader.id}`, reader.token)).body.total).toBe(0);
    expect((await request('GET', '/v1/commons/entries?per_page=1&page=2', reader.token)).body.entries.map((e: any) => e.key)).toEqual(['api.github.ratelimit']);
  });

  test('get one; unknown id → 404 COMMONS_ENTRY_NOT_FOUND', async () => {
    const r = await request('GET', `/v1/commons/entries/${ids['recipe.pancakes']}`, reader.token);
    expect(r.body.entry).toMatchObject({ key: 'recipe.pancakes', source: 'docs', confidence: 0.9, content_trust: 'untrusted_data' });
    const missing = await request('GET', '/v1/commons/entries/00000000-0000-4000-8000-000000000000', reader.token);
    expect(missing.status).toBe(404);
    expect(missing.body.error_code).toBe('COMMONS_ENTRY_NOT_FOUND');
  });

  test('semantic search finds a reworded question; results carry similarity and content_trust', async () => {
    const r = await request('GET', `/v1/commons/search?q=${encodeURIComponent('how many calls per hour does the GitHub API allow')}&threshold=0`, reader.token);
    expect(r.status).toBe(200);
    expect(r.body.results[0]).toMatchObject({ key: 'api.github.ratelimit', content_trust: 'untrusted_data' });
    expect(r.body.results[0].similarity).toBeGreaterThan(r.body.results[1].similarity);
    expect((await request('GET', '/v1/commons/search?q=%20', reader.token)).body.error_code).toBe('COMMONS_QUERY_REQUIRED');
    expect((await request('GET', '/v1/commons/search?q=%C2%85', reader.token)).body.error_code).toBe('COMMONS_QUERY_REQUIRED'); // NEL: String.trim keeps it
    expect((await request('GET', '/v1/commons/search', reader.token)).body.error_code).toBe('COMMONS_QUERY_REQUIRED');
    expect((await request('GET', `/v1/commons/search?q=${'x'.repeat(501)}`, reader.token)).body.error_code).toBe('VALIDATION_FAILED');
  }, 60_000);

  test('stats for _svc.usage: commons size and the agent\'s contributions', async () => {
    const svc = (await import('../src/modules/commons/service')).createCommonsService({
      store: (await import('../src/modules/commons/store')).createCommonsStore(built.database.db), clock, upgradeUrl: 'u',
      lexical: (await import('../src/infra/lexical')).createLexicalIndex(built.database), db: built.database.db,
    });
    expect(await svc.stats(pub.id)).toEqual({ size: 3, contributions: 3 });
    expect(await svc.stats(reader.id)).toEqual({ size: 3, contributions: 0 });
  });

  test('reads are not metered: memory usage does not move', async () => {
    const before = (await request('GET', '/v1/memory/stats', reader.token)).body.ops_this_month;
    await request('GET', '/v1/commons/entries', reader.token);
    await request('GET', '/v1/commons/search?q=pancakes', reader.token);
    expect((await request('GET', '/v1/memory/stats', reader.token)).body.ops_this_month).toBe(before);
  });

  test.each([
    ['GET', '/v1/commons/entries'], ['GET', '/v1/commons/search?q=x'], ['POST', '/v1/commons/entries'],
    ['GET', '/v1/commons/entries/x'], ['POST', '/v1/commons/entries/x/vouch'], ['DELETE', '/v1/commons/entries/x'],
  ])('%s %s without a key → 401 INVALID_API_KEY', async (method, url) => {
    const r = await request(method as 'GET', url, undefined, method === 'POST' && url.endsWith('entries') ? { key: 'k', value: 1 } : undefined);
    expect(r.status).toBe(401);
    expect(r.body.error_code).toBe('INVALID_API_KEY');
  });
});

describe('vouch and delete', () => {
  test('vouch once per agent, never your own', async () => {
    const id = ids['howto.python.venv'];
    const v1 = await request('POST', `/v1/commons/entries/${id}/vouch`, reader.token);
    expect(v1.body).toMatchObject({ status: 'success', vouched: true, already_vouched: false, vouch_count: 1 });
    const v2 = await request('POST', `/v1/commons/entries/${id}/vouch`, reader.token);
    expect(v2.body).toMatchObject({ already_vouched: true, vouch_count: 1 });
    const self = await request('POST', `/v1/commons/entries/${id}/vouch`, pub.token);
    expect(self.status).toBe(403);
    expect(self.body.error_code).toBe('COMMONS_SELF_VOUCH');
    expect((await request('GET', `/v1/commons/entries/${id}`, reader.token)).body.entry.vouch_count).toBe(1);
    expect((await request('POST', '/v1/commons/entries/nope/vouch', reader.token)).body.error_code).toBe('COMMONS_ENTRY_NOT_FOUND');
  });

  test('concurrent vouches of different agents: each answer carries the count after its own vouch', async () => {
    const id = ids['recipe.pancakes'];
    const voters = await Promise.all(Array.from({ length: 6 }, () => agent('free')));
    const answers = await Promise.all(voters.map((v) => request('POST', `/v1/commons/entries/${id}/vouch`, v.token)));
    expect(answers.map((r) => r.body.vouch_count).sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6]);
    expect((await request('GET', `/v1/commons/entries/${id}`, reader.token)).body.entry.vouch_count).toBe(6);
  });

  test('only the publisher deletes; a deleted entry is gone from list, get and search', async () => {
    const id = ids['recipe.pancakes'];
    const other = await request('DELETE', `/v1/commons/entries/${id}`, reader.token);
    expect(other.status).toBe(403);
    expect(other.body.error_code).toBe('COMMONS_NOT_PUBLISHER');
    const del = await request('DELETE', `/v1/commons/entries/${id}`, pub.token);
    expect(del.body).toMatchObject({ status: 'success', entry_id: id, deleted: true });
    expect((await request('GET', `/v1/commons/entries/${id}`, reader.token)).status).toBe(404);
    expect((await request('DELETE', `/v1/commons/entries/${id}`, pub.token)).status).toBe(404);
    expect((await request('GET', '/v1/commons/entries', reader.token)).body.total).toBe(2);
    const s = await request('GET', '/v1/commons/search?q=pancakes%20recipe&threshold=0&limit=20', reader.token);
    expect(s.body.results.map((r: any) => r.key)).not.toContain('recipe.pancakes');
  });
});
