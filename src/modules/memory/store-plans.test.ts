// Query plans of memory's lookups on SQLite: search hits and the indexer's texts are fetched
// through the primary key, never by walking all of an agent's live entries (docs/decisions.md);
// the expiry queries use the partial expiry indexes (migration 0103).
import type SQLite from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { openTempSqlite, type TempSqlite } from '../../../test/helpers/temp-sqlite';
import { createCommitSync } from '../../infra/db/commit-sync';
import type { Database } from '../../infra/db/schema';
import { createMemoryStore } from './store';

let t: TempSqlite;
let sqlite: SQLite.Database;
let db: Kysely<Database>;
const selects: { sql: string; parameters: readonly unknown[] }[] = [];

beforeEach(async () => {
  t = await openTempSqlite('memory-plans', {
    migrate: '0103_memory_expiry_partial_indexes',
    log: (e) => { if (e.level === 'query' && /^select/i.test(e.query.sql)) selects.push(e.query); },
  });
  ({ sqlite, db } = t);
});
afterEach(() => t.close());

const plan = (q: { sql: string; parameters: readonly unknown[] }) =>
  (sqlite.prepare(`EXPLAIN QUERY PLAN ${q.sql}`).all(...(q.parameters as unknown[])) as { detail: string }[]).map((r) => r.detail);

test('search hits and indexer texts are looked up by primary key, not through the (agent, state) index', async () => {
  const store = createMemoryStore({ db, sqlite, commits: createCommitSync(db, sqlite) });
  selects.length = 0; // not the migration's
  await store.getMany('agent-1', ['a', 'b', 'c'], 1000);
  await store.liveValues('agent-1', ['a', 'b'], 1000);
  expect(selects).toHaveLength(2);
  for (const q of selects) {
    const steps = plan(q);
    expect(steps.join('\n')).not.toMatch(/memory_heads_context_idx/);
    expect(steps.find((s) => s.startsWith('SEARCH h '))).toMatch(/\(agent_id=\? AND key=\?\)/);
  }
});

test('expired-bytes correction and sweeper use the partial expiry indexes; a PUT without a TTL adds nothing to them', async () => {
  const store = createMemoryStore({ db, sqlite, commits: createCommitSync(db, sqlite) });
  const put = (key: string, expiresAt: number | null) => store.put({
    agentId: 'agent-1', key, value: '1', sizeBytes: 1, importance: 'normal', importanceRank: 2, source: null, confidence: 1,
    derivedStart: null, derivedEnd: null, expiresAt, now: 1000,
  }, '1970-01', null, () => {});
  await put('forever', null);
  await put('brief', 5000);
  for (const index of ['memory_heads_expiry_idx', 'memory_heads_agent_expiry_idx']) {
    const { sql } = sqlite.prepare('select sql from sqlite_master where name = ?').get(index) as { sql: string };
    expect(sql).toMatch(/where "?expires_at"? is not null$/i);
  }
  selects.length = 0;
  await store.counters('agent-1', '1970-01', 2000);
  await store.sweepExpired(9000, 10);
  const [counters, sweep] = selects.map((q) => plan(q).join('\n'));
  expect(counters).toMatch(/USING (COVERING )?INDEX memory_heads_agent_expiry_idx/);
  expect(sweep).toMatch(/USING INDEX memory_heads_expiry_idx/);
  expect((await store.get('agent-1', 'brief', 9000))).toBeUndefined();
});
