/**
 * Migration 0104 (vector_outbox.attempts / not_before) on an existing database of the engine under
 * test: it adds the columns to svc's own table even when another schema of the same PostgreSQL
 * database (another deployment, an archived copy) holds a vector_outbox that already has them, and on
 * SQLite it can run again after a crash between its two ALTER TABLEs.
 */
import { sql } from 'kysely';
import { afterEach, expect, test } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../src/infra/db/database';
import { engineOf } from '../src/infra/db/dialect';
import { migrateToLatest, migrateUpTo } from '../src/infra/db/migrate';
import { createTestDatabase, type TestDatabase } from './helpers/engines';

let t: TestDatabase | undefined;
let handle: DatabaseHandle | undefined;
afterEach(async () => {
  await handle?.close();
  await t?.close();
  handle = undefined;
  t = undefined;
});

async function before0104(): Promise<DatabaseHandle> {
  t = await createTestDatabase();
  handle = openDatabase({ databaseUrl: t.env.DATABASE_URL, dataDir: t.dataDir, poolMax: 1 });
  await migrateUpTo(handle.db, '0103_memory_expiry_partial_indexes');
  await handle.db.insertInto('vector_outbox').values({ collection: 'memory', owner_id: 'a', item_id: 'k', ticket: 't1', enqueued_at: 1 } as never).execute();
  return handle;
}

/** The row written before the migration reads back with the new columns' defaults, and they can be set. */
async function expectNewColumns(h: DatabaseHandle): Promise<void> {
  expect(await h.db.selectFrom('vector_outbox').select(['item_id', 'attempts', 'not_before']).execute()).toEqual([{ item_id: 'k', attempts: 0, not_before: null }]);
  await h.db.updateTable('vector_outbox').set({ attempts: 1, not_before: 1_800_000_000_000 }).execute();
  expect(await h.db.selectFrom('vector_outbox').select(['attempts', 'not_before']).execute()).toEqual([{ attempts: 1, not_before: 1_800_000_000_000 }]);
}

test('PostgreSQL: another schema\'s vector_outbox that already has the columns does not make the migration skip svc\'s own table', async (ctx) => {
  const h = await before0104();
  if (engineOf(h.db) !== 'postgres') return ctx.skip();
  // Sorted before `public`, where svc's tables are (the search path's first schema).
  await sql`create schema archive`.execute(h.db);
  await sql`create table archive.vector_outbox (collection text, owner_id text, item_id text, ticket text, enqueued_at bigint, attempts integer not null default 0, not_before bigint)`.execute(h.db);
  await migrateToLatest(h.db);
  await expectNewColumns(h);
});

test('SQLite: a crash after the first ALTER TABLE (attempts added, not_before not) lets the migration run again', async (ctx) => {
  const h = await before0104();
  if (engineOf(h.db) !== 'sqlite') return ctx.skip();
  await sql`alter table vector_outbox add column attempts integer not null default 0`.execute(h.db);
  await migrateToLatest(h.db);
  await expectNewColumns(h);
});
