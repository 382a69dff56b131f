import type { Kysely } from 'kysely';

/** Human-approval events (POST/GET /v1/me/approval-events) and their monthly counter per agent. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('approval_events')
    .ifNotExists()
    .addColumn('approval_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('decision', 'text', (c) => c.notNull())
    .addColumn('approver', 'text')
    .addColumn('tool', 'text')
    .addColumn('risk_class', 'text')
    .addColumn('note', 'text')
    .addColumn('decided_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // The list and the activity feed: an agent's events newest first, keyset-paginated on (created_at, approval_id).
  await db.schema.createIndex('approval_events_agent_time_idx').ifNotExists().on('approval_events')
    .columns(['agent_id', 'created_at', 'approval_id']).execute();
  await db.schema
    .createTable('approval_monthly')
    .ifNotExists()
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('month', 'text', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('approval_monthly_pk', ['agent_id', 'month'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
