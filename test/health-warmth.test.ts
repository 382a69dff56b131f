import { afterAll, describe, expect, test } from 'vitest';
import { startFakeEmbeddings, type FakeEmbeddingsServer } from './fakes/openai-embeddings';
import { startTestApp, type TestApp } from './helpers/harness';

/**
 * GET /health says whether the embedding model is loaded, and lists what is warming up: svc answers
 * before the local model is loaded (start-up does not wait for it), loads it with the first text to
 * embed, and reports `cold`, `loading`, `ready` on the way (the real local model, in its thread).
 */
const apps: TestApp[] = [];
let fake: FakeEmbeddingsServer | undefined;
afterAll(async () => {
  for (const a of apps) await a.close();
  await fake?.close();
});
const start = async (env: Record<string, string>) => {
  const t = await startTestApp({ env: { SVC_MEMORY_INDEX_INTERVAL_MS: '20', ...env } });
  apps.push(t);
  return t;
};
const health = async (t: TestApp) => {
  const r = await t.request('GET', '/health');
  expect(r.status).toBe(200);
  return r.body as { status: string; embeddings: string; warming: string[] };
};

describe('GET /health: the embedding model', () => {
  test('local model: cold at start (nothing loaded), loading while its thread reads the weights, then ready', async () => {
    const t = await start({ SVC_EMBEDDINGS: 'local' });
    expect(await health(t)).toMatchObject({ status: 'ok', embeddings: 'cold', warming: [] });
    const a = await t.registerAgent();
    expect((await t.request('PUT', '/v1/memory/warm.1', { token: a.apiKey, body: { value: 'the model loads with the first text to embed' } })).status).toBe(200);
    const seen: string[] = [];
    for (let i = 0; i < 1200; i++) {
      const h = await health(t);
      if (seen.at(-1) !== h.embeddings) seen.push(h.embeddings);
      if (h.embeddings === 'loading') expect(h.warming).toEqual(['embeddings']);
      if (h.embeddings === 'ready') {
        expect(h.warming).toEqual([]);
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    // cold until the indexer picks the write up, loading while the weights are read, then ready:
    // never back (each state seen once, in that order; a probe may miss the short ones).
    expect(seen.at(-1)).toBe('ready');
    const order = ['cold', 'loading', 'ready'];
    expect(seen.map((s) => order.indexOf(s))).toEqual([...seen.map((s) => order.indexOf(s))].sort());
    expect(seen.every((s) => order.includes(s))).toBe(true);
  }, 90_000);

  test('no embeddings configured: none; an embeddings server: remote; nothing is warming', async () => {
    const none = await start({ SVC_EMBEDDINGS: 'none' });
    expect(await health(none)).toMatchObject({ status: 'ok', embeddings: 'none', warming: [] });
    fake = await startFakeEmbeddings({ dimensions: 16 });
    const remote = await start({ SVC_EMBEDDINGS: 'openai', SVC_EMBEDDINGS_URL: fake.url, SVC_EMBEDDINGS_MODEL: 'm', SVC_EMBEDDINGS_DIMENSIONS: '16' });
    expect(await health(remote)).toMatchObject({ status: 'ok', embeddings: 'remote', warming: [] });
  });
});
