// Query plans of memory's key lookups on SQLite: search hits and the indexer's texts are fetched
// through the primary key, never by walking all of an agent's live entries (docs/decisions.md).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { createCommitSync } from '../../infra/db/commit-sync';
import { migrateUpTo } from '../../infra/db/migrate';
import type { Database } from '../../infra/db/schema';
import { createMemoryStore } from './store';

let dir: string;
let sqlite: SQLite.Database;
let db: Kysely<Database>;
const selects: { sql: string; parameters: readonly unknown[] }[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-memory-plans-'));
  sqlite = new SQLite(join(dir, 'db.sqlite'));
  sqlite.pragma('journal_mode = WAL');
  db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: sqlite }),
    log: (e) => { if (e.level === 'query' && /^select/i.test(e.query.sql)) selects.push(e.query); },
  });
  await migrateUpTo(db, '0100_memory');
});
afterEach(async () => {
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
});

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
