/**
 * GET /v1/blobs/search on both engines, with the shared embedder (the OpenAI-compatible client
 * against a loopback fake of the embeddings API, whose bag-of-words vectors make ranking
 * predictable) and the engine's vector index: ranking, threshold, ownership, deletion, the search
 * pool (429 SEARCH_CALLS_LIMIT before any embedding request), 503 without embeddings.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startFakeEmbeddings, type FakeEmbeddingsServer } from './fakes/openai-embeddings';
import { docxDocument, knownPdf, pdfDocument } from './fixtures/documents';
import { eventually, startBlobApp, type BlobApp } from './blobs-support';

let fake: FakeEmbeddingsServer;
let w: BlobApp;

beforeAll(async () => {
  fake = await startFakeEmbeddings({ dimensions: 64 });
  w = await startBlobApp('fs', { SVC_EMBEDDINGS: 'openai', SVC_EMBEDDINGS_URL: fake.url, SVC_EMBEDDINGS_MODEL: 'fake-embed', SVC_EMBEDDINGS_DIMENSIONS: '64' });
}, 60_000);
afterAll(async () => {
  await w?.close();
  await fake?.close();
});

const search = (token: string, qs: string) => w.request('GET', `/v1/blobs/search?${qs}`, { token });

async function parsed(token: string, bytes: Buffer, type: string): Promise<string> {
  const id = (await w.upload(token, bytes, type)).body.blob_id;
  const p = await w.request('POST', `/v1/blobs/${id}/parse`, { token });
  expect(p.body.status).toBe('complete');
  return id;
}

describe('blob search', () => {
  test('finds the chunk that matches, in the web-search shape with provider_used vector; threshold filters', async () => {
    const a = await w.agent();
    const pdf = await parsed(a.token, Buffer.from(await pdfDocument(knownPdf)), 'application/pdf');
    const docx = await parsed(a.token, await docxDocument(), 'application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    const r = await search(a.token, `q=${encodeURIComponent('revenue grew in every region')}&threshold=0`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'success', query: 'revenue grew in every region', provider_used: 'vector', cached: false, response_time_ms: expect.any(Number) });
    expect(r.body.results[0]).toMatchObject({
      blob_id: docx, url: expect.stringContaining(`/v1/blobs/${docx}`), source: 'blob', credibility_score: 0.5, published_date: null,
      snippet: expect.stringContaining('Revenue grew'), chunk_index: expect.any(Number), parse_id: expect.any(String), content_trust: 'untrusted_data',
    });
    expect(r.body.results.map((x: any) => x.blob_id)).toContain(pdf);
    const sims = r.body.results.map((x: any) => x.similarity);
    expect([...sims].sort((x: number, y: number) => y - x)).toEqual(sims);
    expect(r.body.usage).toMatchObject({ calls_total: 1, search_calls_limit: 50 });
    expect(r.body._svc.search_id).toMatch(/^[0-9a-f-]{36}$/);
    const pdfHit = await search(a.token, `q=${encodeURIComponent('analytical engine lighthouse harbour orchard')}&threshold=0&limit=1`);
    expect(pdfHit.body.results.map((x: any) => x.blob_id)).toEqual([pdf]);
    const strict = await search(a.token, `q=${encodeURIComponent('revenue grew in every region')}&threshold=0.99`);
    expect(strict.body.results).toEqual([]);
  });

  test('only your own parsed blobs; a deleted blob drops out at once', async () => {
    const a = await w.agent();
    const b = await w.agent();
    const id = await parsed(a.token, await docxDocument(), 'application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    expect((await search(b.token, 'q=revenue&threshold=0')).body.results).toEqual([]);
    const mine = (await search(a.token, 'q=revenue&threshold=0')).body.results;
    expect(mine.length).toBeGreaterThan(0);
    expect(new Set(mine.map((x: any) => x.blob_id))).toEqual(new Set([id]));
    await w.request('DELETE', `/v1/blobs/${id}`, { token: a.token });
    expect((await search(a.token, 'q=revenue&threshold=0')).body.results).toEqual([]);
  });

  test('a blob parsed again keeps the vectors of chunks whose text is unchanged: nothing is queued or embedded anew', async () => {
    const a = await w.agent();
    const id = await parsed(a.token, await docxDocument(), 'application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    const outbox = async () => Number((await w.built.database.db.selectFrom('vector_outbox').select((e) => e.fn.countAll<number>().as('n'))
      .where('owner_id', '=', a.id).executeTakeFirstOrThrow()).n);
    const inputs = (from: number) => fake.requests.slice(from).flatMap((r) => r.body.input as string[]);
    expect(await outbox()).toBeGreaterThan(0);
    let from = fake.requests.length;
    const first = await search(a.token, 'q=revenue&threshold=0');
    expect(first.body.results.length).toBeGreaterThan(0);
    expect(inputs(from)).toContain('revenue');
    expect(inputs(from).length).toBeGreaterThan(1); // the chunks' windows, then the query
    expect(await outbox()).toBe(0);

    const again = await w.request('POST', `/v1/blobs/${id}/parse`, { token: a.token });
    expect(again.body.status).toBe('complete');
    expect(again.body.parse_id).not.toBe(first.body.results[0].parse_id);
    expect(await outbox()).toBe(0);
    from = fake.requests.length;
    const second = await search(a.token, 'q=revenue&threshold=0');
    expect(inputs(from)).toEqual(['revenue']); // the query only
    expect(second.body.results.map((x: any) => [x.chunk_index, x.similarity])).toEqual(first.body.results.map((x: any) => [x.chunk_index, x.similarity]));
    expect(new Set(second.body.results.map((x: any) => x.parse_id))).toEqual(new Set([again.body.parse_id]));
  });

  test('a chunk packing many table rows is embedded as windows of whole rows, each its own vector', async () => {
    const a = await w.agent();
    const topics = ['harbour lighthouse keeper logbook', 'orchard apple harvest crates', 'violin concerto rehearsal schedule', 'glacier ice core drilling',
      'bakery sourdough starter feeding', 'railway signal maintenance crew', 'comet telescope observation night', 'beekeeping hive inspection notes'];
    const rows = topics.map((t, i) => [`row${i}`, `${t} for the team this week`]);
    const id = await parsed(a.token, Buffer.from(`name,notes\n${rows.map((r) => r.join(',')).join('\n')}\n`), 'text/csv');
    // One chunk holds every row; each window is a few whole rows, each its own vector.
    const vectors = await eventually(async () => {
      const stored = await w.built.database.db.selectFrom('vector_items').select('item_id').where('owner_id', '=', a.id).where('collection', '=', 'blob_chunks').execute();
      const pending = await w.built.database.db.selectFrom('vector_outbox').select('item_id').where('owner_id', '=', a.id).execute();
      return pending.length === 0 && stored.length > 0 && stored.map((r) => r.item_id).sort();
    }, 30_000, 'chunk vectors');
    expect(vectors.length).toBeGreaterThanOrEqual(3);
    expect(vectors.every((v) => v.startsWith(`${id}:0`))).toBe(true);
    const sent = fake.requests.flatMap((r) => (Array.isArray(r.body.input) ? r.body.input : [r.body.input])) as string[];
    expect(sent.some((t) => t.includes('glacier ice core drilling') && !t.includes('harbour lighthouse'))).toBe(true);
  });

  test('422 BLOB_QUERY_REQUIRED, bounds of limit and threshold', async () => {
    const a = await w.agent();
    for (const qs of ['', 'q=', 'q=%20%20', 'q=%C2%85']) { // NEL: whitespace String.trim keeps
      const r = await search(a.token, qs);
      expect([r.status, r.body.error_code], qs).toEqual([422, 'BLOB_QUERY_REQUIRED']);
    }
    for (const qs of ['q=x&limit=0', 'q=x&limit=21', 'q=x&threshold=1.5', 'q=x&threshold=-0.1', `q=${'x'.repeat(501)}`]) {
      const r = await search(a.token, qs);
      expect([r.status, r.body.error_code], qs).toEqual([422, 'VALIDATION_FAILED']);
    }
  });

  test('429 SEARCH_CALLS_LIMIT past the search pool, before any embedding request; an upstream failure is 503 and not charged', async () => {
    const a = await w.agent('starter');
    const day = new Date(w.clock.now()).toISOString().slice(0, 10);
    await w.built.database.db.insertInto('metering_daily').values({ agent_id: a.id, pool: 'search', day, count: 3000 }).execute();
    const before = fake.requests.length;
    const r = await search(a.token, 'q=anything');
    expect([r.status, r.body.error_code]).toEqual([429, 'SEARCH_CALLS_LIMIT']);
    expect(fake.requests.length).toBe(before);
    const c = await w.agent();
    fake.mode = 'status500';
    try {
      const f = await search(c.token, 'q=anything');
      expect([f.status, f.body.error_code]).toEqual([503, 'BLOB_SEARCH_UNAVAILABLE']);
    } finally {
      fake.mode = 'ok';
    }
    expect((await search(c.token, 'q=anything')).body.usage.calls_total).toBe(1);
  });

  test('503 BLOB_SEARCH_UNAVAILABLE on a host without embeddings; no key → 401', async () => {
    const h = await startBlobApp('fs', { SVC_EMBEDDINGS: 'none' });
    try {
      const c = await h.agent();
      const r = await h.request('GET', '/v1/blobs/search?q=x', { token: c.token });
      expect([r.status, r.body.error_code]).toEqual([503, 'BLOB_SEARCH_UNAVAILABLE']);
      expect((await h.request('GET', '/v1/blobs/search?q=x')).body.error_code).toBe('INVALID_API_KEY');
    } finally {
      await h.close();
    }
  });
});
