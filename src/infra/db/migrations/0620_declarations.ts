import { sql, type Kysely } from 'kysely';

/**
 * Declarations (projections of the trust log): consolidation policies and policy bindings (one row
 * per amend, the current one has no superseded_at), journal commitments, tool passports, and the
 * delegations that issued scoped keys. Delegated keys carry their write_set in api_keys.tools.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('consolidation_policies')
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('template_id', 'text', (c) => c.notNull())
    .addColumn('params', 'text', (c) => c.notNull())
    .addColumn('declared_at', 'bigint', (c) => c.notNull())
    .addColumn('log_index', 'bigint', (c) => c.notNull())
    .addColumn('superseded_at', 'bigint')
    .addPrimaryKeyConstraint('consolidation_policies_pk', ['agent_id', 'version'])
    .execute();
  await db.schema.createIndex('consolidation_policies_current').on('consolidation_policies').column('agent_id').unique()
    .where(sql.ref('superseded_at'), 'is', null).execute();

  await db.schema.createTable('policy_bindings')
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('binding_type', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('params', 'text', (c) => c.notNull())
    .addColumn('bound_at', 'bigint', (c) => c.notNull())
    .addColumn('log_index', 'bigint', (c) => c.notNull())
    .addColumn('superseded_at', 'bigint')
    .addPrimaryKeyConstraint('policy_bindings_pk', ['agent_id', 'binding_type', 'version'])
    .execute();
  await db.schema.createIndex('policy_bindings_current').on('policy_bindings').columns(['agent_id', 'binding_type']).unique()
    .where(sql.ref('superseded_at'), 'is', null).execute();

  await db.schema.createTable('journal_commitments')
    .addColumn('commitment_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('commitment_hash', 'text', (c) => c.notNull())
    .addColumn('attestation_source', 'text')
    .addColumn('attestation_client', 'text')
    .addColumn('epoch', 'integer', (c) => c.notNull())
    .addColumn('committed_at', 'bigint', (c) => c.notNull())
    .addColumn('log_index', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('journal_commitments_once').on('journal_commitments').columns(['agent_id', 'commitment_hash']).unique().execute();
  await db.schema.createIndex('journal_commitments_agent_idx').on('journal_commitments').columns(['agent_id', 'log_index']).execute();

  await db.schema.createTable('tool_passports')
    .addColumn('tool_id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('public_key_pem', 'text')
    .addColumn('key_version', 'integer', (c) => c.notNull())
    .addColumn('risk_class', 'text', (c) => c.notNull())
    .addColumn('model_provenance_hash', 'text')
    .addColumn('model_provenance_label', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('created_log_index', 'bigint', (c) => c.notNull())
    .addColumn('rotated_at', 'bigint')
    .addColumn('rotated_log_index', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .addColumn('revoked_log_index', 'bigint')
    .execute();
  // A name names one active tool of its agent; a revoked tool's name is free again.
  await db.schema.createIndex('tool_passports_active_name').on('tool_passports').columns(['agent_id', 'name']).unique()
    .where(sql.ref('revoked_at'), 'is', null).execute();

  await db.schema.createTable('delegations')
    .addColumn('key_id', 'text', (c) => c.primaryKey())
    .addColumn('parent_agent_id', 'text', (c) => c.notNull())
    .addColumn('write_set', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('label', 'text')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('log_index', 'bigint', (c) => c.notNull())
    .addColumn('binding_log_index', 'bigint')
    .execute();
  await db.schema.createIndex('delegations_parent_idx').on('delegations').columns(['parent_agent_id', 'created_at']).execute();

  await db.schema.alterTable('api_keys').addColumn('tools', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
