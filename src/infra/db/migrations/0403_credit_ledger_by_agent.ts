import { sql, type Kysely } from 'kysely';
import { engineOf } from '../dialect';

/**
 * Fewer b-trees written per spend row, again (after 0402). A paid charge appends one spend row;
 * every index of the table is one more b-tree insert and, at each group commit, one more page
 * written to the WAL.
 * - `credit_ledger_charge_idx` goes on both engines: the only reader of charge_id, a refund, now finds
 *   the charge's rows by key (the charge keeps their entry ids).
 * - SQLite: the table is keyed by (agent_id, entry_id), WITHOUT ROWID, so an agent's rows are one range
 *   of the table's own b-tree (entry ids are time-ordered) and `credit_ledger_agent_idx` goes too. One
 *   b-tree per spend row instead of three. PostgreSQL keeps its entry_id key and the agent index.
 * Same columns, same rows; `ref` stays unique where set.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (engineOf(db) === 'postgres') {
    await db.schema.dropIndex('credit_ledger_charge_idx').ifExists().execute();
    return;
  }
  // SQLite migrations run outside a transaction (Kysely: no transactional DDL there): the rebuild is
  // one, so a crash leaves either the old table or the new one.
  await db.transaction().execute(async (trx) => {
    await sql`create table credit_ledger_next (
      entry_id text not null,
      agent_id text not null,
      kind text not null,
      amount_units bigint not null,
      lot_id text not null,
      expires_at bigint,
      action text,
      charge_id text,
      ref text,
      created_at bigint not null,
      primary key (agent_id, entry_id)
    ) without rowid`.execute(trx);
    await sql`insert into credit_ledger_next (entry_id, agent_id, kind, amount_units, lot_id, expires_at, action, charge_id, ref, created_at)
      select entry_id, agent_id, kind, amount_units, lot_id, expires_at, action, charge_id, ref, created_at from credit_ledger`.execute(trx);
    await sql`drop table credit_ledger`.execute(trx);
    await sql`alter table credit_ledger_next rename to credit_ledger`.execute(trx);
    await trx.schema.createIndex('credit_ledger_ref_uidx').on('credit_ledger').column('ref').unique()
      .where(sql.ref('ref'), 'is not', null).execute();
  });
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
