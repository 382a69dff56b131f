/**
 * A per-agent, per-UTC-month counter with a cap, decided by one conditional increment (`count < cap`)
 * in the caller's transaction, so concurrent writers (even on several instances) never pass the cap.
 * Tables of this shape: feedback_monthly, approval_monthly.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema';

export type MonthlyCounterTable = 'feedback_monthly' | 'approval_monthly';

/** Counts one more for (agent, month) unless `cap` is reached; false when capped (nothing changed). */
export async function countWithinCap(trx: Transaction<Database> | Kysely<Database>, table: MonthlyCounterTable, agentId: string, month: string, cap: number): Promise<boolean> {
  // The two tables have the same columns; Kysely types each table name separately.
  const t = table as 'feedback_monthly';
  await trx.insertInto(t).values({ agent_id: agentId, month, count: 0 })
    .onConflict((oc) => oc.columns(['agent_id', 'month']).doNothing()).execute();
  const r = await trx.updateTable(t).set({ count: sql`count + 1` })
    .where('agent_id', '=', agentId).where('month', '=', month).where('count', '<', cap)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** This month's count (0 before the first). */
export async function monthlyCount(db: Kysely<Database>, table: MonthlyCounterTable, agentId: string, month: string): Promise<number> {
  const r = await db.selectFrom(table as 'feedback_monthly').select('count').where('agent_id', '=', agentId).where('month', '=', month).executeTakeFirst();
  return Number(r?.count ?? 0);
}
