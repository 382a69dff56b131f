import type { Kysely } from 'kysely';

/**
 * The trust log (an RFC 9162 Merkle tree of canonical JSON entries), its complete-subtree hashes,
 * signed checkpoints and signing key; custody epochs; and the reputation projections (events,
 * decayed aggregates, daily buckets for the sub-signals, disputes). Existing agents get epoch 1
 * here; its log entry is appended at start-up (modules/trust/backfill.ts), where the Merkle code lives.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('trust_log_entries')
    .addColumn('log_index', 'bigint', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text')
    .addColumn('epoch', 'integer')
    .addColumn('entry', 'text', (c) => c.notNull())
    .addColumn('leaf_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('trust_log_entries_agent_idx').on('trust_log_entries').columns(['agent_id', 'log_index']).execute();

  // Hash of the complete subtree (level, idx): leaves [idx·2^level, (idx+1)·2^level).
  await db.schema.createTable('trust_log_nodes')
    .addColumn('level', 'integer', (c) => c.notNull())
    .addColumn('idx', 'bigint', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('trust_log_nodes_pk', ['level', 'idx'])
    .execute();

  // One row (id 1): the tree size. Appends lock it, so one writer appends at a time.
  await db.schema.createTable('trust_log_head')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .execute();
  await db.insertInto('trust_log_head').values({ id: 1, size: 0 }).execute();

  await db.schema.createTable('trust_log_keys')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('private_key_pem', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema.createTable('trust_log_checkpoints')
    .addColumn('tree_size', 'bigint', (c) => c.primaryKey())
    .addColumn('root_hash', 'text', (c) => c.notNull())
    .addColumn('note', 'text', (c) => c.notNull())
    .addColumn('signed_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema.createTable('agent_epochs')
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('epoch', 'integer', (c) => c.notNull())
    .addColumn('opened_at', 'bigint', (c) => c.notNull())
    .addColumn('opened_by', 'text', (c) => c.notNull())
    .addColumn('closed_at', 'bigint')
    .addColumn('open_log_index', 'bigint')
    .addPrimaryKeyConstraint('agent_epochs_pk', ['agent_id', 'epoch'])
    .execute();
  await db.schema.createIndex('agent_epochs_unlogged_idx').on('agent_epochs').column('open_log_index').execute();
  const agents = await db.selectFrom('agents').select(['agent_id', 'created_at']).execute();
  for (let i = 0; i < agents.length; i += 200) {
    await db.insertInto('agent_epochs')
      .values(agents.slice(i, i + 200).map((a) => ({ agent_id: a.agent_id, epoch: 1, opened_at: a.created_at, opened_by: 'registration', closed_at: null, open_log_index: null })))
      .execute();
  }

  await db.schema.createTable('reputation_events')
    .addColumn('event_id', 'text', (c) => c.primaryKey())
    .addColumn('log_index', 'bigint', (c) => c.notNull().unique())
    .addColumn('subject_agent_id', 'text', (c) => c.notNull())
    .addColumn('epoch', 'integer', (c) => c.notNull())
    .addColumn('rater_agent_id', 'text', (c) => c.notNull())
    .addColumn('ref_type', 'text', (c) => c.notNull())
    .addColumn('ref_id', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('note', 'text')
    .addColumn('rater_weight', 'double precision', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('suppressed_at', 'bigint')
    .addUniqueConstraint('reputation_events_once', ['rater_agent_id', 'subject_agent_id', 'ref_type', 'ref_id'])
    .execute();
  await db.schema.createIndex('reputation_events_subject_idx').on('reputation_events').columns(['subject_agent_id', 'epoch', 'created_at', 'event_id']).execute();
  await db.schema.createIndex('reputation_events_rater_idx').on('reputation_events').columns(['rater_agent_id', 'created_at']).execute();

  // Exponentially decayed sums as of ref_at (category 'all' scores; per category only counts are read).
  await db.schema.createTable('reputation_aggregates')
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('epoch', 'integer', (c) => c.notNull())
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('alpha_sum', 'double precision', (c) => c.notNull())
    .addColumn('beta_sum', 'double precision', (c) => c.notNull())
    .addColumn('ref_at', 'bigint', (c) => c.notNull())
    .addColumn('event_count', 'integer', (c) => c.notNull())
    .addColumn('signal_count', 'integer', (c) => c.notNull())
    .addColumn('last_event_at', 'bigint')
    .addPrimaryKeyConstraint('reputation_aggregates_pk', ['agent_id', 'epoch', 'category'])
    .execute();

  // Per UTC day and category: counted ratings and, per outcome, weights and weight·(time into the day), for the linear 90-day decay.
  await db.schema.createTable('reputation_day_buckets')
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('epoch', 'integer', (c) => c.notNull())
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('day_start', 'bigint', (c) => c.notNull())
    .addColumn('approved_w', 'double precision', (c) => c.notNull())
    .addColumn('approved_wt', 'double precision', (c) => c.notNull())
    .addColumn('error_w', 'double precision', (c) => c.notNull())
    .addColumn('error_wt', 'double precision', (c) => c.notNull())
    .addColumn('rejected_w', 'double precision', (c) => c.notNull())
    .addColumn('rejected_wt', 'double precision', (c) => c.notNull())
    .addColumn('n', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('reputation_day_buckets_pk', ['agent_id', 'epoch', 'category', 'day_start'])
    .execute();

  await db.schema.createTable('reputation_disputes')
    .addColumn('dispute_id', 'text', (c) => c.primaryKey())
    .addColumn('event_id', 'text', (c) => c.notNull().unique())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('filed_at', 'bigint', (c) => c.notNull())
    .addColumn('filed_day', 'text', (c) => c.notNull())
    .addColumn('filed_log_index', 'bigint', (c) => c.notNull())
    .addColumn('decided_at', 'bigint')
    .addColumn('decision_note', 'text')
    .addColumn('decided_log_index', 'bigint')
    .execute();
  await db.schema.createIndex('reputation_disputes_day_idx').on('reputation_disputes').columns(['agent_id', 'filed_day']).execute();

  await db.schema.createTable('trust_parity_checks')
    .addColumn('check_id', 'text', (c) => c.primaryKey())
    .addColumn('checked_at', 'bigint', (c) => c.notNull())
    .addColumn('result', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('trust_parity_checks_time_idx').on('trust_parity_checks').column('checked_at').execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
