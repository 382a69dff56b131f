/**
 * Migrations 0402 (credit ledger indexes) and 0403 (ledger keyed by agent, no charge index) over a
 * ledger written with the schema before them: every row survives unchanged, a set `ref` stays unique,
 * rows without one (spends) are not indexed on it, and charges and refunds still work afterwards. On
 * the engine under test.
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
  expect(await migrateUpTo(handle.db, '0402_credit_ledger_indexes')).toContain('0402_credit_ledger_indexes');
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

});

describe('migration 0403: the ledger keyed by agent, no charge index', () => {
  let rowsBefore: Record<string, unknown>[];
  beforeAll(async () => {
    rowsBefore = sorted(await handle.db.selectFrom('credit_ledger').selectAll().execute() as never);
    expect(await migrateToLatest(handle.db)).toContain('0403_credit_ledger_by_agent');
  });

  test('every row survives unchanged; a set ref is still unique', async () => {
    expect(sorted(await handle.db.selectFrom('credit_ledger').selectAll().execute() as never)).toEqual(rowsBefore);
    await expect(handle.db.insertInto('credit_ledger').values(entry({ kind: 'grant', ref: 'grant:welcome' })).execute()).rejects.toThrow(/unique|duplicate/i);
  });

  test('SQLite: one b-tree keyed (agent_id, entry_id) and the partial ref index only; PostgreSQL: no charge index', async () => {
    if (handle.sqlite) {
      const table = handle.sqlite.prepare("select sql from sqlite_master where type = 'table' and name = 'credit_ledger'").get() as { sql: string };
      expect(table.sql).toMatch(/primary key \(agent_id, entry_id\)\s*\)\s*without rowid/i);
      const indexes = handle.sqlite.prepare("select name from sqlite_master where type = 'index' and tbl_name = 'credit_ledger'").all() as { name: string }[];
      expect(indexes.map((i) => i.name)).toEqual(['credit_ledger_ref_uidx']);
      const plan = (handle.sqlite.prepare("explain query plan select * from credit_ledger where agent_id = ? order by created_at").all('a') as { detail: string }[])
        .map((r) => r.detail).join('\n');
      expect(plan).toMatch(/SEARCH credit_ledger USING PRIMARY KEY \(agent_id=\?\)/);
    } else {
      const { rows } = await sql<{ indexname: string }>`select indexname from pg_indexes where tablename = 'credit_ledger'`.execute(handle.db);
      expect(rows.map((r) => r.indexname).sort()).toEqual(['credit_ledger_agent_idx', 'credit_ledger_pkey', 'credit_ledger_ref_uidx']);
    }
  });

  test('charges, refunds (found by their entry ids, exactly once) and the ledger balance after the migration', async () => {
    const rig = rigOn(handle, new ManualClock());
    const who = agent();
    await rig.credits.add(who, { kind: 'purchase', units: credits(10), ref: `pi_${who}` });
    for (let i = 0; i < 50; i++) await rig.metering.charge(who, 'search');
    const paid = [];
    for (let i = 0; i < 5; i++) paid.push(await rig.metering.charge(who, 'search'));
    await expect(rig.metering.charge(who, 'search')).rejects.toMatchObject({ code: 'INSUFFICIENT_CREDITS' });
    await paid[2]!.refund();
    await paid[2]!.refund();
    expect((await rig.credits.balance(who)).units).toBe(credits(2));
    expect(await rig.credits.ledgerBalance(who)).toBe(credits(2));
    const refunds = await handle.db.selectFrom('credit_ledger').select(['charge_id', 'amount_units']).where('agent_id', '=', who).where('kind', '=', 'refund').execute();
    expect(refunds.map((r) => [r.charge_id, Number(r.amount_units)])).toEqual([[paid[2]!.chargeId, credits(2)]]);
  });

  test('grants stay exactly-once by ref and charges spend from them after the migrations (billing runs on the latest schema)', async () => {
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
