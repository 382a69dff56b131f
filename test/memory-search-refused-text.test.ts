import { afterAll, beforeAll, expect, test } from 'vitest';
import { startFakeEmbeddings, type FakeEmbeddingsServer } from './fakes/openai-embeddings';
import { startTestApp, type TestApp } from './helpers/harness';

/**
 * An embeddings model with a small context length (a TEI or Ollama model of 512 tokens is common):
 * one memory whose text it refuses must not make that agent's searches fail for good, nor hold up
 * the indexing of anything written after it (src/infra/vectors/indexer.ts).
 */
let fake: FakeEmbeddingsServer;
let t: TestApp;
beforeAll(async () => {
  fake = await startFakeEmbeddings({ dimensions: 32, maxInputTokens: 300 });
  t = await startTestApp({
    env: {
      SVC_EMBEDDINGS: 'openai', SVC_EMBEDDINGS_URL: fake.url, SVC_EMBEDDINGS_MODEL: 'small-context', SVC_EMBEDDINGS_DIMENSIONS: '32',
      SVC_EMBEDDINGS_TIMEOUT_MS: '2000', SVC_MEMORY_INDEX_INTERVAL_MS: '600000', SVC_SEARCH_EMBED_WAIT_MS: '120000',
    },
  });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

test('a memory whose text the model refuses is left out of search; the agent\'s searches answer and find everything else', async () => {
  const a = await t.registerAgent();
  const put = (key: string, value: unknown) => t.request('PUT', `/v1/memory/${key}`, { token: a.apiKey, body: { value } });
  expect((await put('invoice', 'Invoice 42 from the plumber is due on the 3rd')).status).toBe(200);
  // ~600 bytes of text to embed: over the model's 300 tokens, so the server answers 400 for any batch holding it.
  expect((await put('journal', { entry: 'plumber '.repeat(75) })).status).toBe(200);
  expect((await put('receipt', 'Receipt for the plumber visit, paid in cash')).status).toBe(200);

  const search = () => t.request('GET', '/v1/memory/search?q=plumber&threshold=0', { token: a.apiKey });
  const first = await search();
  expect(first.status).toBe(200); // was 503 MEMORY_SEARCH_UNAVAILABLE on every search, for good
  // The refused memory has no vector, but its words are indexed: it is found by them (lexical half).
  expect(first.body.results.map((r: any) => r.key).sort()).toEqual(['invoice', 'journal', 'receipt']);
  expect(first.body.pending_embeddings).toBe(1); // and the answer says one item is not searchable by meaning
  expect(fake.requests.some((r) => (r.body.input as string[]).length === 1 && (r.body.input as string[])[0].includes('plumber plumber'))).toBe(true);

  // The refused text waits out its backoff: the next search does not send it to the model again.
  const sent = fake.requests.length;
  const second = await search();
  expect(second.status).toBe(200);
  expect(fake.requests.slice(sent).map((r) => r.body.input)).toEqual([['plumber']]); // only the query

  // Rewritten to a text the model takes, it is found by the next search.
  expect((await put('journal', { entry: 'Called the plumber about the leak' })).status).toBe(200);
  const third = await search();
  expect(third.status).toBe(200);
  expect(third.body.results.map((r: any) => r.key).sort()).toEqual(['invoice', 'journal', 'receipt']);
});

test('another agent\'s refused memory neither shows in nor blocks this agent\'s search', async () => {
  const a = await t.registerAgent();
  const b = await t.registerAgent();
  expect((await t.request('PUT', '/v1/memory/long', { token: b.apiKey, body: { value: 'plumber '.repeat(80) } })).status).toBe(200);
  expect((await t.request('GET', '/v1/memory/search?q=plumber&threshold=0', { token: b.apiKey })).status).toBe(200);
  expect((await t.request('PUT', '/v1/memory/note', { token: a.apiKey, body: { value: 'plumber on Tuesday' } })).status).toBe(200);
  const res = await t.request('GET', '/v1/memory/search?q=plumber&threshold=0', { token: a.apiKey });
  expect(res.status).toBe(200);
  expect(res.body.results.map((r: any) => r.key)).toEqual(['note']);
});

test('GET /admin/vectors shows the operator the refused item, until a new write clears it', async () => {
  const c = await t.registerAgent();
  const admin = { 'x-admin-key': 'test-admin-key' };
  expect((await t.request('PUT', '/v1/memory/too-long', { token: c.apiKey, body: { value: 'plumber '.repeat(90) } })).status).toBe(200);
  expect((await t.request('GET', '/v1/memory/search?q=plumber&threshold=0', { token: c.apiKey })).status).toBe(200);

  const view = await t.request('GET', '/admin/vectors', { headers: admin });
  expect(view.status).toBe(200);
  expect(view.body.embeddings).toEqual({ model_id: expect.stringContaining('small-context'), dimensions: 32 });
  const mine = view.body.set_aside_items.filter((i: any) => i.owner_id === c.agentId);
  expect(mine).toHaveLength(1);
  expect(mine[0]).toMatchObject({ collection: 'memory', refusals: 1 });
  expect(Date.parse(mine[0].retry_at)).toBe(t.clock.now() + 60_000); // the first refusal waits a minute
  const memory = view.body.collections.find((x: any) => x.collection === 'memory');
  expect(memory.set_aside).toBeGreaterThanOrEqual(1);
  expect(memory.next_retry_at).not.toBeNull();

  // An agent's key is not the admin key.
  expect((await t.request('GET', '/admin/vectors', { token: c.apiKey })).body.error_code).toBe('INVALID_ADMIN_KEY');

  expect((await t.request('PUT', '/v1/memory/too-long', { token: c.apiKey, body: { value: 'plumber, short now' } })).status).toBe(200);
  expect((await t.request('GET', '/v1/memory/search?q=plumber&threshold=0', { token: c.apiKey })).status).toBe(200);
  const after = await t.request('GET', '/admin/vectors', { headers: admin });
  expect(after.body.set_aside_items.filter((i: any) => i.owner_id === c.agentId)).toEqual([]);
});
