import type { Kysely } from 'kysely';

/**
 * Credit holds (billing/leases.ts): a block of an agent's credit set aside, under the account lock,
 * for one svc instance to decide paid calls from in memory. A hold is no spend: the credit stays in
 * its lots until the instance settles the calls it answered (spend rows, the day counter, the hold
 * made smaller), and every charge decided under the lock counts only credit no live hold sets aside.
 * A hold whose `expires_at` has passed sets nothing aside (its instance died or stalled); it is
 * deleted by the next hold taken for the agent. Keyed by agent, so the charge's read is one range.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('metering_holds')
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('hold_id', 'text', (c) => c.notNull())
    .addColumn('pool', 'text', (c) => c.notNull())
    .addColumn('units', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('metering_holds_pk', ['agent_id', 'hold_id'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
