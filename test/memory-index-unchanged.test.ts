import { afterAll, beforeAll, expect, test } from 'vitest';
import { startFakeEmbeddings, type FakeEmbeddingsServer } from './fakes/openai-embeddings';
import { startTestApp, type TestApp } from './helpers/harness';

/**
 * A value written again with the same text (a retried or repeated write) is a new version on the
 * ledger, but its words and vectors stand: nothing is re-indexed or re-embedded (src/infra/lexical).
 */
let fake: FakeEmbeddingsServer;
let t: TestApp;
beforeAll(async () => {
  fake = await startFakeEmbeddings({ dimensions: 32 });
  t = await startTestApp({
    env: {
      SVC_EMBEDDINGS: 'openai', SVC_EMBEDDINGS_URL: fake.url, SVC_EMBEDDINGS_MODEL: 'unchanged-text', SVC_EMBEDDINGS_DIMENSIONS: '32',
      SVC_MEMORY_INDEX_INTERVAL_MS: '600000', SVC_SEARCH_EMBED_WAIT_MS: '120000',
    },
  });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

test('the same value again is a new version, found as before, with no re-embedding; a changed value is embedded anew', async () => {
  const a = await t.registerAgent();
  const put = (value: unknown) => t.request('PUT', '/v1/memory/trip.plan', { token: a.apiKey, body: { value } });
  const search = (q: string) => t.request('GET', `/v1/memory/search?q=${encodeURIComponent(q)}&threshold=0`, { token: a.apiKey });
  const embedded = (from: number) => fake.requests.slice(from).flatMap((r) => r.body.input as string[]);
  const outbox = async () => Number((await t.database.db.selectFrom('vector_outbox').select((e) => e.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  const value = { destination: 'Lisbon', note: 'Flight departs Tuesday morning' };

  expect((await put(value)).body.version).toBe(1);
  let from = fake.requests.length;
  expect((await search('lisbon')).body.results.map((r: any) => r.key)).toEqual(['trip.plan']);
  expect(embedded(from)).toEqual(expect.arrayContaining([expect.stringContaining('Lisbon'), 'lisbon'])); // the value's text, then the query

  // The same value, twice more: versions 2 and 3, nothing queued.
  expect((await put(value)).body.version).toBe(2);
  expect((await put(value)).body.version).toBe(3);
  expect(await outbox()).toBe(0);
  from = fake.requests.length;
  const again = await search('lisbon');
  expect(again.body.results.map((r: any) => r.key)).toEqual(['trip.plan']);
  expect(again.body.pending_embeddings).toBe(0);
  expect(embedded(from)).toEqual(['lisbon']); // the query only
  const versions = await t.database.db.selectFrom('memory_versions').select('version').where('agent_id', '=', a.agentId).where('key', '=', 'trip.plan').execute();
  expect(versions.map((v) => Number(v.version)).sort()).toEqual([1, 2, 3]);
  const hashOf = async () => (await t.database.db.selectFrom('lexical_docs').select('text_hash').where('item_id', '=', 'trip.plan').where('owner_id', '=', a.agentId).executeTakeFirstOrThrow()).text_hash;
  const hash = await hashOf();

  // A changed value: re-indexed at once and embedded again.
  expect((await put({ ...value, destination: 'Porto' })).body.version).toBe(4);
  expect(await outbox()).toBe(1);
  from = fake.requests.length;
  expect((await search('porto')).body.results.map((r: any) => r.key)).toEqual(['trip.plan']);
  expect(embedded(from)).toEqual(expect.arrayContaining([expect.stringContaining('Porto'), 'porto']));
  expect(await hashOf()).not.toBe(hash);
});
