import { sql, type Kysely } from 'kysely';

/**
 * Stake, sponsorship and slashing (projections of the trust log; the money itself is in the credit
 * ledger: each stake is a lot of the agent's stake account, lot_id = stake_id).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('stakes')
    .addColumn('stake_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('tier', 'text', (c) => c.notNull())
    .addColumn('units', 'bigint', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('staked_at', 'bigint', (c) => c.notNull())
    .addColumn('locked_until', 'bigint', (c) => c.notNull())
    .addColumn('cooling_until', 'bigint')
    .addColumn('ended_at', 'bigint')
    .addColumn('released_units', 'bigint')
    .addColumn('created_log_index', 'bigint', (c) => c.notNull())
    .addColumn('updated_log_index', 'bigint', (c) => c.notNull())
    .execute();
  // One open stake (active or cooling) per agent; ended ones stay as history.
  await db.schema.createIndex('stakes_open_once').on('stakes').column('agent_id').unique()
    .where(sql.ref('status'), 'in', sql`('active', 'cooling')`).execute();
  await db.schema.createIndex('stakes_cooling_idx').on('stakes').columns(['status', 'cooling_until']).execute();

  await db.schema.createTable('sponsorships')
    .addColumn('sponsorship_id', 'text', (c) => c.primaryKey())
    .addColumn('sponsor_agent_id', 'text', (c) => c.notNull())
    .addColumn('ward_agent_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('created_log_index', 'bigint', (c) => c.notNull())
    .addColumn('revoke_requested_at', 'bigint')
    .addColumn('revokes_at', 'bigint')
    .addColumn('revoke_log_index', 'bigint')
    .addColumn('ring_flagged_at', 'bigint')
    .addColumn('ring_log_index', 'bigint')
    .execute();
  // One sponsorship per (sponsor, ward) that no revoke was asked for.
  await db.schema.createIndex('sponsorships_open_once').on('sponsorships').columns(['sponsor_agent_id', 'ward_agent_id']).unique()
    .where(sql.ref('revoke_requested_at'), 'is', null).execute();
  await db.schema.createIndex('sponsorships_ward_idx').on('sponsorships').column('ward_agent_id').execute();

  await db.schema.createTable('slashes')
    .addColumn('slash_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('harmed_agent_id', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('requested_units', 'bigint', (c) => c.notNull())
    .addColumn('taken_units', 'bigint', (c) => c.notNull())
    .addColumn('harmed_units', 'bigint', (c) => c.notNull())
    .addColumn('insurance_units', 'bigint', (c) => c.notNull())
    .addColumn('burned_units', 'bigint', (c) => c.notNull())
    /** JSON: what was taken from each stake (the agent's own, its sponsors'). */
    .addColumn('takes', 'text', (c) => c.notNull())
    .addColumn('decided_at', 'bigint', (c) => c.notNull())
    .addColumn('log_index', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('slashes_agent_idx').on('slashes').column('agent_id').execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
