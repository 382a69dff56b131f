import SQLite from 'better-sqlite3';
import { Kysely, sql, SqliteDialect } from 'kysely';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { prepared, preparedWrite } from './prepared';
import type { Database } from './schema';

// A table of the real schema; the statements are built with Kysely as the stores build theirs.
let sqlite: SQLite.Database;
let db: Kysely<Database>;
beforeEach(async () => {
  sqlite = new SQLite(':memory:');
  db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  await sql`create table memory_usage (agent_id text not null, month text not null, writes integer not null default 0,
    searches integer not null default 0, primary key (agent_id, month))`.execute(db);
});
afterEach(async () => {
  await db.destroy();
});

const S = { agent: '\u0000agent', month: '\u0000month', limit: -987_654_321_000_010 };
const cappedCount = (s: typeof S) => db.insertInto('memory_usage').values({ agent_id: s.agent, month: s.month, writes: 1, searches: 0 })
  .onConflict((oc) => oc.columns(['agent_id', 'month']).doUpdateSet({ writes: sql`memory_usage.writes + 1` }).where('memory_usage.writes', '<', s.limit));
const writesOf = (agent: string) => db.selectFrom('memory_usage').select('writes').where('agent_id', '=', agent).executeTakeFirst();

for (const direct of [true, false]) {
  const via = direct ? 'straight on the connection' : 'through Kysely';
  test(`preparedWrite answers the rows it changed (${via}), 0 when the upsert's condition refuses`, async () => {
    const count = preparedWrite(db, S, cappedCount, direct ? sqlite : undefined);
    const results = await db.transaction().execute(async (trx) => {
      const out: number[] = [];
      for (let i = 0; i < 4; i++) out.push(await count({ agent: 'a1', month: '2026-11', limit: 3 }, trx));
      return out;
    });
    expect(results).toEqual([1, 1, 1, 0]);
    expect((await writesOf('a1'))?.writes).toBe(3);
  });

  test(`prepared binds each call's values in place of the sentinels and keeps constants (${via})`, async () => {
    await db.insertInto('memory_usage').values([
      { agent_id: 'a1', month: '2026-10', writes: 5, searches: 0 },
      { agent_id: 'a1', month: '2026-11', writes: 7, searches: 2 },
      { agent_id: 'a2', month: '2026-11', writes: 9, searches: 0 },
    ]).execute();
    // `searches >= 1` is a constant of the query, not a sentinel: it must survive the substitution.
    const read = prepared(db, S, (s) => db.selectFrom('memory_usage').select(['agent_id', 'writes'])
      .where('agent_id', '=', s.agent).where('month', '=', s.month).where('searches', '>=', 1), direct ? sqlite : undefined);
    expect(await read({ agent: 'a1', month: '2026-11' })).toEqual([{ agent_id: 'a1', writes: 7 }]);
    expect(await read({ agent: 'a2', month: '2026-11' })).toEqual([]);
    // A value left out binds as null (matches nothing here).
    expect(await read({ agent: 'a1' })).toEqual([]);
  });
}

test('preparedWrite refuses a statement that returns rows', () => {
  expect(() => preparedWrite(db, S, (s) => db.selectFrom('memory_usage').selectAll().where('agent_id', '=', s.agent), sqlite))
    .toThrow(/returns rows/);
});
