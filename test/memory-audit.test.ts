/**
 * Memory checks against the API's rules for memory (entries, routes, errors, limits) and docs/memory.md.
 * Each test fails on the defect it names and passes on the behaviour the API contract (or the documented
 * design) asks for.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createCommitSync } from '../src/infra/db/commit-sync';
import { ManualClock } from '../src/lib/clock';
import { createMemoryService } from '../src/modules/memory/service';
import { createMemoryStore } from '../src/modules/memory/store';
import { testEngine } from './helpers/engines';
import { startFakeEmbeddings, type FakeEmbeddingsServer } from './fakes/openai-embeddings';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';
import { openTempSqlite } from './helpers/temp-sqlite';

describe('semantic search: a q of only whitespace is 422 MEMORY_QUERY_REQUIRED (spec: Errors)', () => {
  let fake: FakeEmbeddingsServer;
  let t: TestApp;
  let a: RegisteredAgent;
  beforeAll(async () => {
    fake = await startFakeEmbeddings({ dimensions: 32 });
    t = await startTestApp({
      env: {
        SVC_EMBEDDINGS: 'openai', SVC_EMBEDDINGS_URL: fake.url, SVC_EMBEDDINGS_MODEL: 'fake-model', SVC_EMBEDDINGS_DIMENSIONS: '32',
        SVC_EMBEDDINGS_TIMEOUT_MS: '2000', SVC_MEMORY_INDEX_INTERVAL_MS: '600000', SVC_MEMORY_RATE_PER_MINUTE: '0',
      },
    });
    a = await t.registerAgent();
    expect((await t.request('PUT', '/v1/memory/fruit', { token: a.apiKey, body: { value: 'a red apple' } })).status).toBe(200);
  });
  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });

  // U+0085 (NEXT LINE) is Unicode White_Space, but String.prototype.trim keeps it: such a q was embedded,
  // searched and counted as a memory operation.
  test.each([['%C2%85'], ['%C2%85%20%C2%85'], ['%E3%80%80%C2%85%09']])('q=%s → 422, not searched, not counted', async (q) => {
    const before = (await t.request('GET', '/v1/memory/stats', { token: a.apiKey })).body.ops_this_month;
    const res = await t.request('GET', `/v1/memory/search?q=${q}&threshold=0`, { token: a.apiKey });
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe('MEMORY_QUERY_REQUIRED');
    expect((await t.request('GET', '/v1/memory/stats', { token: a.apiKey })).body.ops_this_month).toBe(before);
  });
});

/**
 * docs/memory.md: "A memory read is answered only once everything committed before it is flushed
 * ... so nobody is shown a value a power loss could still take back." GET, list, context and search
 * followed it; GET /v1/memory/stats (and the usage of a DELETE, and billing's memory_storage_bytes,
 * which reads stats) answered counters straight away, showing a write whose PUT was not yet
 * acknowledged. SQLite only: PostgreSQL's COMMIT is durable when it returns (nothing to wait for).
 */
describe.runIf(testEngine() === 'sqlite')('GET /v1/memory/stats waits for the flush of what it read', () => {
  test('stats of a committed but unflushed write are answered only after the flush', async () => {
    const tmp = await openTempSqlite('memory-audit', { migrate: 'latest' });
    try {
      const pending: (() => void)[] = [];
      const commits = createCommitSync(tmp.db, tmp.sqlite, { flush: () => new Promise<void>((r) => pending.push(r)) });
      const clock = new ManualClock();
      const memory = createMemoryService({ store: createMemoryStore({ db: tmp.db, sqlite: tmp.sqlite, commits }), clock, upgradeUrl: 'u' });
      const caller = { agentId: 'agent-audit', tier: 'free' };
      const tick = () => new Promise((r) => setImmediate(r));

      const put = memory.put(caller, 'k', { value: 'not yet on disk' });
      for (let i = 0; i < 20 && pending.length === 0; i++) await tick();
      expect(pending).toHaveLength(1); // committed, flush running: the PUT is not acknowledged yet

      let shown: { storage_bytes: number; ops_this_month: number } | undefined;
      const stats = memory.stats(caller).then((s) => { shown = s; });
      for (let i = 0; i < 20; i++) await tick();
      expect(shown).toBeUndefined();

      pending[0]();
      await Promise.all([put, stats]);
      expect(shown).toMatchObject({ storage_bytes: Buffer.byteLength('"not yet on disk"'), ops_this_month: 1 });
      await commits.close();
    } finally {
      await tmp.close();
    }
  });
});
