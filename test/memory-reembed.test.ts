import { afterAll, beforeAll, expect, test } from 'vitest';
import { buildApp, type App } from '../src/app';
import { loadConfig } from '../src/config';
import { ManualClock } from '../src/lib/clock';
import { startFakeEmbeddings, type FakeEmbeddingsServer } from './fakes/openai-embeddings';
import { createTestDatabase, type TestDatabase } from './helpers/engines';

/**
 * A change of embeddings model re-embeds in the background rather than mixing vectors: the same
 * database is opened by an app on model A, then by one on model B (an OpenAI-compatible loopback fake).
 */
let tdb: TestDatabase;
let fake: FakeEmbeddingsServer;
const clock = new ManualClock();
beforeAll(async () => {
  tdb = await createTestDatabase();
  fake = await startFakeEmbeddings({ dimensions: 64 });
});
afterAll(async () => {
  await fake?.close();
  await tdb?.close();
});

const build = (model: string, intervalMs: number) => buildApp({
  clock, logger: false,
  config: loadConfig({
    LOG_LEVEL: 'silent', PORT: '0', ...tdb.env, SVC_EMBEDDINGS: 'openai', SVC_EMBEDDINGS_URL: fake.url,
    SVC_EMBEDDINGS_MODEL: model, SVC_EMBEDDINGS_DIMENSIONS: '64', SVC_MEMORY_INDEX_INTERVAL_MS: String(intervalMs),
  }),
});
/** PGlite's socket server frees its one connection slot a moment after a client leaves: retry. */
async function start(model: string, intervalMs: number): Promise<App> {
  for (let i = 0; ; i++) {
    try {
      return await build(model, intervalMs);
    } catch (e) {
      if (i >= 10 || !/Connection terminated/.test(String(e))) throw e;
      await new Promise((r) => setTimeout(r, 300));
    }
  }
}
const call = async (app: App, method: 'GET' | 'PUT' | 'POST', url: string, token?: string, body?: unknown) => {
  const res = await app.app.inject({ method, url, headers: token ? { authorization: `Bearer ${token}` } : {}, ...(body ? { payload: body as object } : {}) });
  return res.json();
};
const models = async (app: App) =>
  (await app.database.db.selectFrom('vector_items').select('model_id').where('collection', '=', 'memory').execute()).map((r) => r.model_id).sort();
async function until(cond: () => Promise<boolean>, ms = 10_000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('model A → model B: every vector is re-embedded with B in the background; search never mixes models', async () => {
  const a = await start('model-a', 20);
  const reg = await call(a, 'POST', '/v1/register', undefined, { agent_name: 'reembed', owner_identifier: 'o', agree_to_terms: true });
  const token = reg.api_key as string;
  for (const [k, v] of [['colour', 'favourite colour is green'], ['city', 'lives in the city of Porto'], ['car', 'drives a blue bicycle']]) {
    await call(a, 'PUT', `/v1/memory/${k}`, token, { value: v });
  }
  await until(async () => (await models(a)).length === 3); // the background indexer, no search needed
  expect(await models(a)).toEqual(['openai:model-a', 'openai:model-a', 'openai:model-a']);
  await a.app.close();

  // Model B, background indexing off: the stale vectors are queued at start, a search finishes the agent's share.
  const b = await start('model-b', 600_000);
  await until(async () => Number((await b.database.db.selectFrom('vector_outbox').select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow()).n) === 3);
  const found = await call(b, 'GET', '/v1/memory/search?q=city%20of%20Porto&threshold=0&limit=3', token);
  expect(found.results.map((r: any) => r.key)[0]).toBe('city');
  expect(found.results).toHaveLength(3);
  expect(await models(b)).toEqual(['openai:model-b', 'openai:model-b', 'openai:model-b']);
  const bodies = fake.requests.map((r) => r.body.model);
  expect(bodies).toContain('model-a');
  expect(bodies).toContain('model-b');
  await b.app.close();
});

test('the commons is re-embedded with the new model too: its entries are found after a model change', async () => {
  const commonsModels = async (app: App) =>
    (await app.database.db.selectFrom('vector_items').select('model_id').where('collection', '=', 'commons').execute()).map((r) => r.model_id);
  const a = await start('model-c', 20);
  const reg = await call(a, 'POST', '/v1/register', undefined, { agent_name: 'reembed-commons', owner_identifier: 'o2', agree_to_terms: true });
  await a.database.db.updateTable('agents').set({ tier: 'spark' }).where('agent_id', '=', reg.agent_id).execute(); // may publish
  for (const key of ['howto.tea', 'howto.coffee']) {
    const r = await a.app.inject({ method: 'POST', url: '/v1/commons/entries', headers: { authorization: `Bearer ${reg.api_key}` }, payload: { key, value: `how to brew ${key.slice(6)}` } });
    expect(r.statusCode).toBe(201);
  }
  await until(async () => (await commonsModels(a)).length === 2);
  await a.app.close();

  const b = await start('model-d', 600_000);
  await until(async () => Number((await b.database.db.selectFrom('vector_outbox').select((e) => e.fn.countAll().as('n')).where('collection', '=', 'commons').executeTakeFirstOrThrow()).n) === 2);
  const found = await call(b, 'GET', '/v1/commons/search?q=brew%20tea&threshold=0&limit=5', reg.api_key);
  expect(found.results.map((r: any) => r.key).sort()).toEqual(['howto.coffee', 'howto.tea']);
  expect((await commonsModels(b)).sort()).toEqual(['openai:model-d', 'openai:model-d']);
  await b.app.close();
});
