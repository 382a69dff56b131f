/**
 * The browse log's durability contract on SQLite (store.ts): a browse is answered at COMMIT with its
 * WAL flush started and not awaited; readers of the log answer only once that flush is done; a
 * charge that refuses leaves no row and nothing to flush.
 */
import type SQLite from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { openTempSqlite, type TempSqlite } from '../../../test/helpers/temp-sqlite';
import { createCommitSync } from '../../infra/db/commit-sync';
import type { Database } from '../../infra/db/schema';
import { createBrowseStore, type BrowseRow } from './store';

let t: TempSqlite;
let sqlite: SQLite.Database;
let db: Kysely<Database>;

beforeEach(async () => {
  t = await openTempSqlite('browse-store', { migrate: '0302_browse_page_meta' });
  ({ sqlite, db } = t);
});
afterEach(() => t.close());

/** A WAL flush the test finishes by hand. */
function manualFlush() {
  const pending: { resolve(): void; reject(e: Error): void }[] = [];
  return { pending, flush: () => new Promise<void>((resolve, reject) => pending.push({ resolve, reject })) };
}
const settle = () => new Promise((r) => setImmediate(r));
const row = (id: string, at: number): BrowseRow => ({
  browse_id: id, agent_id: 'agent-1', url: 'https://example.com/', final_url: 'https://example.com/', mode: 'static',
  http_status: 200, content_type: 'text/html', title: 'Example', text: 'Example text',
  byline: 'Ana Ruiz', published_at: '2024-03-05', language: 'es', site_name: null, response_time_ms: 12, created_at: at,
});
const count = () => (sqlite.prepare('select count(*) as n from browse_log').get() as { n: number }).n;

test('a browse is answered at COMMIT with its flush started; reads of the log wait for that flush', async () => {
  const m = manualFlush();
  const commits = createCommitSync(db, sqlite, { flush: m.flush });
  const store = createBrowseStore({ db, sqlite, commits });

  const charged = await store.insertCharged(row('b-1', 1000), async () => 'charge-1');
  // Answered: the row is committed (in the WAL), the flush is running, nobody waited for it.
  expect(charged).toBe('charge-1');
  expect(count()).toBe(1);
  expect(m.pending).toHaveLength(1);
  expect(commits.unsynced).toBe(true);
  // The commit ran with synchronous NORMAL, and FULL is back for every other transaction.
  expect(sqlite.pragma('synchronous', { simple: true })).toBe(2);

  const seen: string[] = [];
  const get = store.get('agent-1', 'b-1').then((r) => seen.push(`get ${r?.browse_id}`));
  const feed = store.page('agent-1', 10).then((rs) => seen.push(`page ${rs.map((r) => r.browse_id).join(',')}`));
  for (let i = 0; i < 5; i++) await settle();
  expect(seen).toEqual([]);
  m.pending[0].resolve();
  await Promise.all([get, feed]);
  expect(seen.sort()).toEqual(['get b-1', 'page b-1']);
  expect(commits.unsynced).toBe(false);

  // Nothing unflushed: a read answers at once; another agent's id reads as missing.
  expect((await store.get('agent-1', 'b-1'))?.text).toBe('Example text');
  expect(await store.get('agent-1', 'b-1')).toMatchObject({ byline: 'Ana Ruiz', published_at: '2024-03-05', language: 'es', site_name: null });
  expect(await store.get('agent-2', 'b-1')).toBeUndefined();
  expect(m.pending).toHaveLength(1);
});

test('a charge that refuses rolls the log row back: nothing logged, nothing to flush', async () => {
  const m = manualFlush();
  const commits = createCommitSync(db, sqlite, { flush: m.flush });
  const store = createBrowseStore({ db, sqlite, commits });
  await expect(store.insertCharged(row('b-2', 1000), async () => { throw new Error('402'); })).rejects.toThrow('402');
  // A row inserted before the refusal is rolled back with it.
  await expect(store.insertCharged(row('b-3', 1000), async (trx) => {
    await trx.insertInto('browse_log').values(row('b-4', 1000)).execute();
    throw new Error('refused late');
  })).rejects.toThrow('refused late');
  expect(count()).toBe(0);
  expect(commits.unsynced).toBe(false);
  expect(m.pending).toHaveLength(0);
  expect(await store.get('agent-1', 'b-2')).toBeUndefined();
});
