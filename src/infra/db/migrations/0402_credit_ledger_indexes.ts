import { sql, type Kysely } from 'kysely';
import { engineOf } from '../dialect';

/**
 * Fewer index writes per ledger row. A paid charge appends one spend row, and every index of the
 * table is one more b-tree insert and, at commit, one more page written to the WAL.
 * - `ref` (idempotency of grants, purchases and refunds) is unique only where it is set: spends have
 *   none, and a column UNIQUE indexed every one of their NULLs. Now a partial unique index.
 * - SQLite: the table becomes WITHOUT ROWID, keyed by `entry_id` (time-ordered for new rows), so the
 *   key is the table's own b-tree instead of a second index beside a rowid table.
 * Same columns, same rows, same uniqueness for every set `ref`.
 */
const refIndex = (db: Kysely<any>) => db.schema.createIndex('credit_ledger_ref_uidx').on('credit_ledger').column('ref').unique()
  .where(sql.ref('ref'), 'is not', null).execute();

export async function up(db: Kysely<any>): Promise<void> {
  if (engineOf(db) === 'postgres') {
    // One transaction (Kysely runs PostgreSQL migrations in one): the column constraint's name is
    // PostgreSQL's default for it.
    await sql`alter table credit_ledger drop constraint credit_ledger_ref_key`.execute(db);
    await refIndex(db);
  } else {
    // SQLite migrations run outside a transaction (Kysely: no transactional DDL there): the rebuild
    // is one, so a crash leaves either the old table or the new one.
    await db.transaction().execute(async (trx) => {
      await sql`create table credit_ledger_next (
        entry_id text primary key not null,
        agent_id text not null,
        kind text not null,
        amount_units bigint not null,
        lot_id text not null,
        expires_at bigint,
        action text,
        charge_id text,
        ref text,
        created_at bigint not null
      ) without rowid`.execute(trx);
      await sql`insert into credit_ledger_next (entry_id, agent_id, kind, amount_units, lot_id, expires_at, action, charge_id, ref, created_at)
        select entry_id, agent_id, kind, amount_units, lot_id, expires_at, action, charge_id, ref, created_at from credit_ledger`.execute(trx);
      await sql`drop table credit_ledger`.execute(trx);
      await sql`alter table credit_ledger_next rename to credit_ledger`.execute(trx);
      await trx.schema.createIndex('credit_ledger_agent_idx').on('credit_ledger').columns(['agent_id', 'created_at']).execute();
      await trx.schema.createIndex('credit_ledger_charge_idx').on('credit_ledger').column('charge_id').execute();
      await refIndex(trx);
    });
  }
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
