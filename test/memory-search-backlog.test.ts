import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startFakeEmbeddings, type FakeEmbeddingsServer } from './fakes/openai-embeddings';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

/**
 * A search is never held hostage by the embedding backlog (docs/memory.md, "Hybrid search"): with
 * 5,000 of an agent's memories waiting for a slowed stand-in model (an OpenAI-compatible loopback
 * fake that takes 5 s for any request holding a backlog text), a memory written just before a
 * search is found at once by its words, the answer comes within its budget, and `pending_embeddings`
 * says the results may be incomplete. The clock is the harness's injected ManualClock.
 */
let fake: FakeEmbeddingsServer;
let t: TestApp;
let a: RegisteredAgent;
const BACKLOG = 5000;
beforeAll(async () => {
  fake = await startFakeEmbeddings({ dimensions: 64, delayMs: (inputs) => (inputs.some((x) => x.includes('backlog')) ? 5000 : 0) });
  t = await startTestApp({
    env: {
      SVC_EMBEDDINGS: 'openai', SVC_EMBEDDINGS_URL: fake.url, SVC_EMBEDDINGS_MODEL: 'slow-model', SVC_EMBEDDINGS_DIMENSIONS: '64',
      SVC_MEMORY_INDEX_INTERVAL_MS: '20', SVC_MEMORY_RATE_PER_MINUTE: '0', SVC_EMBEDDINGS_TIMEOUT_MS: '60000', SVC_METERING_ENABLED: 'false',
    },
  });
  a = await t.registerAgent();
  await t.database.db.updateTable('agents').set({ tier: 'spark' }).where('agent_id', '=', a.agentId).execute(); // no monthly write cap
  for (let i = 0; i < BACKLOG; i += 250) {
    const puts = Array.from({ length: Math.min(250, BACKLOG - i) }, (_, j) =>
      t.request('PUT', `/v1/memory/bulk.${i + j}`, { token: a.apiKey, body: { value: `backlog note ${i + j} about shipping container inventory` } }));
    for (const r of await Promise.all(puts)) expect(r.status).toBe(200);
  }
}, 600_000);
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const search = (qs: string, token = a.apiKey) => t.request('GET', `/v1/memory/search?${qs}`, { token });

describe('memory search with 5,000 items waiting for a slow model', () => {
  test('a memory PUT just before a search is found at once by its words; the answer is prompt and says it may be incomplete', async () => {
    expect((await t.request('PUT', '/v1/memory/fresh.okr', { token: a.apiKey, body: { value: 'Quarterly OKR review with Dana moved to Thursday' } })).status).toBe(200);
    const started = performance.now();
    const res = await search('q=OKR%20review&threshold=0&limit=3');
    const ms = performance.now() - started;
    expect(res.status).toBe(200);
    expect(res.body.results[0].key).toBe('fresh.okr');
    // Waiting for the backlog (or even one batch of it at the slow model's 5 s) would take seconds.
    expect(ms).toBeLessThan(2500);
    expect(res.body.pending_embeddings).toBeGreaterThan(BACKLOG / 2); // the slowed background has embedded a few batches meanwhile
    expect(res.body.pending_embeddings).toBeLessThanOrEqual(BACKLOG + 1);
    // With thousands pending the search did not try to catch up (the newest few could not make it
    // complete by meaning): no request to the model held the fresh text; it was found by its words.
    expect(fake.requests.some((r) => JSON.stringify(r.body.input).includes('Quarterly OKR'))).toBe(false);
  });

  test('an upper-case query finds the lower-case text, and the default threshold keeps a full word match', async () => {
    const res = await search('q=QUARTERLY%20OKR%20REVIEW');
    expect(res.status).toBe(200);
    expect(res.body.results.map((r: { key: string }) => r.key)).toContain('fresh.okr');
    for (const r of res.body.results) expect(r.similarity).toBeGreaterThanOrEqual(0.7);
  });

  test('another agent\'s fresh write is found by meaning at once: its catch-up does not wait behind this backlog', async () => {
    const b = await t.registerAgent();
    await t.request('PUT', '/v1/memory/dentist', { token: b.apiKey, body: { value: 'Dentist appointment on Friday at 3pm' } });
    const res = await search('q=dentist%20appointment%20friday&threshold=0', b.apiKey);
    expect(res.status).toBe(200);
    expect(res.body.results.map((r: { key: string }) => r.key)).toEqual(['dentist']);
    expect(res.body.pending_embeddings).toBe(0);
    const stored = await t.database.db.selectFrom('vector_items').select('item_id').where('owner_id', '=', b.agentId).execute();
    expect(stored.map((r) => r.item_id)).toEqual(['dentist']);
  });
});
