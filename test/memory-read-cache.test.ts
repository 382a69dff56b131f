import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startFakeEmbeddings, type FakeEmbeddingsServer } from './fakes/openai-embeddings';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

/**
 * GET /v1/memory/{key} keeps hot reads in process on SQLite (src/modules/memory/read-cache.ts).
 * Whatever changes an agent's memory — a write, a delete, a search count, an expiry, a new month —
 * must show in the very next read, on both engines, even when the same key was just read.
 */
let fake: FakeEmbeddingsServer;
let t: TestApp;
let a: RegisteredAgent;
let b: RegisteredAgent;
beforeAll(async () => {
  fake = await startFakeEmbeddings({ dimensions: 32 });
  t = await startTestApp({
    env: {
      SVC_EMBEDDINGS: 'openai', SVC_EMBEDDINGS_URL: fake.url, SVC_EMBEDDINGS_MODEL: 'fake-model', SVC_EMBEDDINGS_DIMENSIONS: '32',
      SVC_EMBEDDINGS_TIMEOUT_MS: '2000', SVC_MEMORY_INDEX_INTERVAL_MS: '600000', SVC_MEMORY_RATE_PER_MINUTE: '0',
    },
  });
  a = await t.registerAgent();
  b = await t.registerAgent();
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const put = (key: string, body: unknown, who = a) => t.request('PUT', `/v1/memory/${key}`, { token: who.apiKey, body });
const get = (key: string, who = a) => t.request('GET', `/v1/memory/${key}`, { token: who.apiKey });
const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

describe('GET after a change, with the key read just before', () => {
  test('writes, writes of other keys, searches and deletes show at once', async () => {
    expect((await put('hot', { value: 'v1' })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await get('hot')).body).toMatchObject({ value: 'v1', version: 1, usage: { ops_this_month: 1 } });

    expect((await put('hot', { value: { v: 2 } })).status).toBe(200);
    expect((await get('hot')).body).toMatchObject({ value: { v: 2 }, version: 2, usage: { ops_this_month: 2, storage_bytes: bytes({ v: 2 }) } });

    await get('hot');
    expect((await put('other', { value: 'xyz' })).status).toBe(200);
    expect((await get('hot')).body.usage).toMatchObject({ ops_this_month: 3, storage_bytes: bytes({ v: 2 }) + bytes('xyz') });

    await get('hot');
    expect((await t.request('GET', '/v1/memory/search?q=anything&threshold=0', { token: a.apiKey })).status).toBe(200);
    expect((await get('hot')).body.usage).toMatchObject({ ops_this_month: 3, searches_this_month: 1 }); // the search counted, as a search

    await get('hot');
    expect((await t.request('DELETE', '/v1/memory/other', { token: a.apiKey })).status).toBe(200);
    expect((await get('hot')).body.usage.storage_bytes).toBe(bytes({ v: 2 }));

    await get('hot');
    expect((await t.request('DELETE', '/v1/memory/hot', { token: a.apiKey })).status).toBe(200);
    expect((await get('hot')).body.error_code).toBe('MEMORY_KEY_NOT_FOUND');
    expect((await put('hot', { value: 'back' })).status).toBe(200);
    expect((await get('hot')).body).toMatchObject({ value: 'back', version: 4 });
  });

  test("another agent's writes to the same key name neither show nor disturb", async () => {
    expect((await put('shared.name', { value: 'mine' })).status).toBe(200);
    expect((await get('shared.name')).body.value).toBe('mine');
    expect((await get('shared.name', b)).body.error_code).toBe('MEMORY_KEY_NOT_FOUND');
    expect((await put('shared.name', { value: 'theirs' }, b)).status).toBe(200);
    expect((await get('shared.name')).body).toMatchObject({ value: 'mine', usage: { ops_this_month: expect.any(Number) } });
    expect((await get('shared.name', b)).body).toMatchObject({ value: 'theirs', usage: { ops_this_month: 1 } });
  });

  test("time alone: the entry's expiry, another entry's expiry (storage) and the new month (counters)", async () => {
    const c = await t.registerAgent();
    t.clock.set(Date.UTC(2026, 10, 30, 23, 58, 0));
    expect((await put('stay', { value: 'a' }, c)).status).toBe(200);
    expect((await put('short', { value: 'bb', ttl: 30 }, c)).status).toBe(200);
    expect((await put('long', { value: 'ccc', ttl: 600 }, c)).status).toBe(200);
    for (let i = 0; i < 2; i++) {
      expect((await get('stay', c)).body.usage).toMatchObject({ ops_this_month: 3, storage_bytes: bytes('a') + bytes('bb') + bytes('ccc') });
      expect((await get('short', c)).status).toBe(200);
    }

    t.clock.advance(30_000); // 'short' expires now: absent, and out of storage, with no write and no sweep
    expect((await get('short', c)).body.error_code).toBe('MEMORY_KEY_NOT_FOUND');
    expect((await get('stay', c)).body.usage).toMatchObject({ ops_this_month: 3, storage_bytes: bytes('a') + bytes('ccc') });

    t.clock.advance(90_000); // 2026-12-01 00:00:00: a new UTC month
    expect((await get('stay', c)).body.usage).toMatchObject({ ops_this_month: 0, storage_bytes: bytes('a') + bytes('ccc') });

    t.clock.advance(480_000); // 'long' expires
    expect((await get('long', c)).body.error_code).toBe('MEMORY_KEY_NOT_FOUND');
    expect((await get('stay', c)).body.usage.storage_bytes).toBe(bytes('a'));
  });

  test('parallel writes and reads of one key: once a write is answered, reads see it or something newer', async () => {
    expect((await put('race', { value: 0 })).status).toBe(200);
    let last = 0;
    for (let round = 1; round <= 5; round++) {
      const reads = Array.from({ length: 10 }, () => get('race'));
      const written = await put('race', { value: round });
      expect(written.status).toBe(200);
      await Promise.all(reads);
      const after = await get('race');
      expect(after.body.value).toBe(round);
      expect(after.body.value).toBeGreaterThan(last);
      last = after.body.value;
    }
  });
});
