import type { Kysely } from 'kysely';

/**
 * billing_accounts.meter_stamp: a fresh unique value written by every transaction that locks the
 * account (metering.ts). An instance's in-memory copy of an agent's metering state is used only
 * while the stamp it was made under is still the one stored, so any other write (another instance,
 * a grant, a refund, a rolled-back charge) makes it reload.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('billing_accounts').addColumn('meter_stamp', 'text').execute();
  // The stamp it replaced: one UPDATE ... RETURNING both locks the row and tells the charge which
  // stamp its in-memory copy must match (RETURNING gives values after the update).
  await db.schema.alterTable('billing_accounts').addColumn('meter_prev_stamp', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
