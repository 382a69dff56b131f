import { afterAll, beforeAll, expect, test } from 'vitest';
import { startFakeEmbeddings, type FakeEmbeddingsServer } from './fakes/openai-embeddings';
import { startTestApp, type TestApp } from './helpers/harness';

/** An OpenAI-compatible embeddings server (loopback fake) that fails, then recovers. */
let fake: FakeEmbeddingsServer;
let t: TestApp;
beforeAll(async () => {
  fake = await startFakeEmbeddings({ dimensions: 32 });
  t = await startTestApp({
    env: {
      SVC_EMBEDDINGS: 'openai', SVC_EMBEDDINGS_URL: fake.url, SVC_EMBEDDINGS_MODEL: 'fake-model', SVC_EMBEDDINGS_DIMENSIONS: '32',
      SVC_EMBEDDINGS_TIMEOUT_MS: '2000', SVC_MEMORY_INDEX_INTERVAL_MS: '600000', SVC_SEARCH_EMBED_WAIT_MS: '120000',
    },
  });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

test('embeddings upstream down: PUT still succeeds at once, search answers 503 and is not counted; recovery finds the write', async () => {
  const a = await t.registerAgent();
  fake.mode = 'status500';
  const put = await t.request('PUT', '/v1/memory/invoice', { token: a.apiKey, body: { value: 'Invoice 42 from the plumber is due on the 3rd' } });
  expect(put.status).toBe(200);
  const down = await t.request('GET', '/v1/memory/search?q=plumber%20invoice', { token: a.apiKey });
  expect(down.status).toBe(503);
  expect(down.body.error_code).toBe('MEMORY_SEARCH_UNAVAILABLE');
  expect(down.raw).not.toContain('500'); // the upstream's detail stays in the logs
  // The failed search is not counted.
  expect((await t.request('GET', '/v1/memory/stats', { token: a.apiKey })).body).toMatchObject({ ops_this_month: 1, searches_this_month: 0 });

  fake.mode = 'ok';
  const up = await t.request('GET', '/v1/memory/search?q=plumber%20invoice&threshold=0', { token: a.apiKey });
  expect(up.status).toBe(200);
  expect(up.body.results.map((r: any) => r.key)).toEqual(['invoice']);
  expect(up.body.usage).toMatchObject({ ops_this_month: 1, searches_this_month: 1 });
});
