/**
 * Migration 0402 (credit ledger indexes) over a ledger written with the schema before it: every row
 * survives unchanged, a set `ref` stays unique, rows without one (spends) are not indexed on it, and
 * the charge's hot path still works afterwards. On the engine under test.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../src/infra/db/database';
import { migrateToLatest, migrateUpTo } from '../src/infra/db/migrate';
import { ManualClock } from '../src/lib/clock';
import { newOrderedId } from '../src/lib/ids';
import { credits } from '../src/lib/money';
import { agent, rigOn } from './billing-support';
import { createTestDatabase, type TestDatabase } from './helpers/engines';

let t: TestDatabase;
let handle: DatabaseHandle;
const owner = agent();
const entry = (over: Record<string, unknown>) => ({
  entry_id: newOrderedId(), agent_id: owner, kind: 'spend', amount_units: -100, lot_id: 'lot-1', expires_at: null,
  action: 'memory_write', charge_id: newOrderedId(), ref: null, created_at: 1_700_000_000_000, ...over,
});
const before = [
  entry({ kind: 'grant', amount_units: 5000, lot_id: 'lot-1', expires_at: 1_800_000_000_000, action: null, charge_id: null, ref: 'grant:welcome' }),
  entry({}),
  entry({ created_at: 1_700_000_000_001 }),
  entry({ kind: 'refund', amount_units: 100, ref: 'refund:x', created_at: 1_700_000_000_002 }),
];
const sorted = (rows: Record<string, unknown>[]) => [...rows].map((r): Record<string, unknown> => ({ ...r, amount_units: Number(r.amount_units), created_at: Number(r.created_at),
  expires_at: r.expires_at === null ? null : Number(r.expires_at) })).sort((a, b) => String(a.entry_id).localeCompare(String(b.entry_id)));

beforeAll(async () => {
  t = await createTestDatabase();
  handle = openDatabase({ databaseUrl: t.env.DATABASE_URL, dataDir: t.dataDir, poolMax: 4 });
  await migrateUpTo(handle.db, '0401_billing_meter_stamp');
  await handle.db.insertInto('credit_ledger').values(before).execute();
  expect(await migrateToLatest(handle.db)).toContain('0402_credit_ledger_indexes');
});
afterAll(async () => {
  await handle?.close();
  await t?.close();
});

describe('migration 0402: credit ledger indexes', () => {
  test('every row survives unchanged', async () => {
    const rows = await handle.db.selectFrom('credit_ledger').selectAll().execute();
    expect(sorted(rows as never)).toEqual(sorted(before));
  });

  test('a set ref is still unique; rows without one are many', async () => {
    await expect(handle.db.insertInto('credit_ledger').values(entry({ kind: 'grant', ref: 'grant:welcome' })).execute()).rejects.toThrow(/unique|duplicate/i);
    await handle.db.insertInto('credit_ledger').values([entry({}), entry({})]).execute();
    const n = await handle.db.selectFrom('credit_ledger').select((e) => e.fn.countAll<number>().as('n')).where('ref', 'is', null).executeTakeFirstOrThrow();
    expect(Number(n.n)).toBe(4);
  });

  test('the unique index on ref is partial; SQLite keeps the rows in the entry_id b-tree (no rowid)', async () => {
    if (handle.sqlite) {
      const table = handle.sqlite.prepare("select sql from sqlite_master where type = 'table' and name = 'credit_ledger'").get() as { sql: string };
      expect(table.sql).toMatch(/without rowid/i);
      const indexes = handle.sqlite.prepare("select name, sql from sqlite_master where type = 'index' and tbl_name = 'credit_ledger'").all() as { name: string; sql: string | null }[];
      // Only the three named indexes; no automatic index for a column UNIQUE or a rowid table's key.
      expect(indexes.map((i) => i.name).sort()).toEqual(['credit_ledger_agent_idx', 'credit_ledger_charge_idx', 'credit_ledger_ref_uidx']);
      expect(indexes.find((i) => i.name === 'credit_ledger_ref_uidx')!.sql).toMatch(/unique[\s\S]*where[\s\S]*is not null/i);
    } else {
      const { rows } = await sql<{ indexname: string; indexdef: string }>`select indexname, indexdef from pg_indexes where tablename = 'credit_ledger'`.execute(handle.db);
      const onRef = rows.filter((r) => /\(ref\)/.test(r.indexdef));
      expect(onRef).toHaveLength(1);
      expect(onRef[0]!.indexdef).toMatch(/UNIQUE[\s\S]*WHERE \(ref IS NOT NULL\)/);
    }
  });

  test('grants stay exactly-once by ref and charges spend from them after the migration', async () => {
    const clock = new ManualClock();
    const rig = rigOn(handle, clock);
    const who = agent();
    expect((await rig.credits.add(who, { kind: 'purchase', units: credits(10), ref: `pi_${who}` })).added).toBe(true);
    expect((await rig.credits.add(who, { kind: 'purchase', units: credits(10), ref: `pi_${who}` })).added).toBe(false);
    // Past the 50 free searches, each search costs 2 credits from the single purchase of 10.
    for (let i = 0; i < 50; i++) await rig.metering.charge(who, 'search');
    const paid = [];
    for (let i = 0; i < 5; i++) paid.push(await rig.metering.charge(who, 'search'));
    expect(paid.every((c) => !c.free && c.costUnits === credits(2))).toBe(true);
    await expect(rig.metering.charge(who, 'search')).rejects.toMatchObject({ code: 'INSUFFICIENT_CREDITS' });
    await paid[0]!.refund();
    expect((await rig.metering.charge(who, 'search')).costUnits).toBe(credits(2));
  });
});
