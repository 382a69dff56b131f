import type { Kysely } from 'kysely';

/**
 * The charge of an async parse, kept with the parse (billing's `ChargeReceipt` as JSON): a parse that
 * dead-letters (failed, reason internal) or whose blob was deleted before it ran gives its parse op
 * back from it in the transaction that marks it failed, on whichever instance runs the queue. Null for sync parses (refunded in the
 * request) and for parses of hosts without metering.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('parse_jobs').addColumn('charge_receipt', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
