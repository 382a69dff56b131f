import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';

/**
 * The public directory (GET /v1/agents).
 * - passports: the self-declared agent_type and domain of the description route.
 * - directory_ranks: versioned rank rows, one current row per listed agent (and per synthetic
 *   founding profile): the rank score, age and the shown description. A change closes the current
 *   row (valid_to = the new version) and inserts the next (valid_from = it), so a cursor pages one
 *   version of the directory while agents register, list and get rated. Closed rows are deleted
 *   once no cursor can still read them.
 * - directory_state: the version counter (one row; writers lock it, so versions commit in order)
 *   and the cursor MAC key made here, shared by every instance on the database.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('passports').addColumn('agent_type', 'text').execute();
  await db.schema.alterTable('passports').addColumn('domain', 'text').execute();
  // The refresh reads the listed agents; most agents are not listed.
  await db.schema.createIndex('passports_listed_idx').on('passports').column('agent_id').where(sql.ref('listed'), '=', 1).execute();

  await db.schema.createTable('directory_ranks')
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('valid_from', 'bigint', (c) => c.notNull())
    .addColumn('valid_to', 'bigint')
    .addColumn('closed_at', 'bigint')
    // 1,000,000 − the rank score in millionths: ascending order is best reputation first.
    .addColumn('order_score', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('score_at', 'bigint', (c) => c.notNull())
    .addColumn('agent_name', 'text', (c) => c.notNull())
    .addColumn('bio', 'text')
    .addColumn('skills', 'text', (c) => c.notNull())
    .addColumn('agent_type', 'text')
    .addColumn('domain', 'text')
    .addColumn('agent_card_url', 'text')
    .addColumn('bridge', 'integer', (c) => c.notNull())
    .addColumn('synthetic', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('directory_ranks_pk', ['agent_id', 'valid_from'])
    .execute();
  await db.schema.createIndex('directory_ranks_current').on('directory_ranks').column('agent_id').unique()
    .where(sql.ref('valid_to'), 'is', null).execute();
  // Keyset order (order_score, created_at, agent_id), alone and after each filter.
  await db.schema.createIndex('directory_ranks_order').on('directory_ranks').columns(['order_score', 'created_at', 'agent_id']).execute();
  await db.schema.createIndex('directory_ranks_type').on('directory_ranks').columns(['agent_type', 'order_score', 'created_at', 'agent_id']).execute();
  await db.schema.createIndex('directory_ranks_domain').on('directory_ranks').columns(['domain', 'order_score', 'created_at', 'agent_id']).execute();
  await db.schema.createIndex('directory_ranks_bridge').on('directory_ranks').columns(['order_score', 'created_at', 'agent_id'])
    .where(sql.ref('bridge'), '=', 1).execute();
  await db.schema.createIndex('directory_ranks_closed').on('directory_ranks').column('closed_at')
    .where(sql.ref('closed_at'), 'is not', null).execute();

  await db.schema.createTable('directory_state')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('version', 'bigint', (c) => c.notNull())
    .addColumn('cursor_secret', 'text', (c) => c.notNull())
    .addColumn('refreshed_at', 'bigint')
    .execute();
  await db.insertInto('directory_state').values({ id: 1, version: 0, cursor_secret: randomBytes(32).toString('base64url'), refreshed_at: null }).execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
