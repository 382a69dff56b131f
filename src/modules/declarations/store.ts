/** SQL of the declarations (projections of the trust log). Every per-agent query is keyed by agent_id. */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type {
  ConsolidationPoliciesTable, DelegationsTable, JournalCommitmentsTable, PolicyBindingsTable, ToolPassportsTable,
} from '../../infra/db/tables/declarations';

type Db = Kysely<Database> | Transaction<Database>;

export function createDeclarationsStore(db: Kysely<Database>) {
  return {
    // ---- consolidation policy ----
    currentPolicy(agentId: string, q: Db = db) {
      return q.selectFrom('consolidation_policies').selectAll().where('agent_id', '=', agentId).where('superseded_at', 'is', null).executeTakeFirst();
    },
    async declarePolicy(trx: Transaction<Database>, row: ConsolidationPoliciesTable): Promise<void> {
      await trx.updateTable('consolidation_policies').set({ superseded_at: row.declared_at })
        .where('agent_id', '=', row.agent_id).where('superseded_at', 'is', null).execute();
      await trx.insertInto('consolidation_policies').values(row).execute();
    },
    allPolicies: (q: Db = db) => q.selectFrom('consolidation_policies').selectAll().execute(),

    // ---- policy bindings ----
    currentBindings(agentId: string, q: Db = db) {
      return q.selectFrom('policy_bindings').selectAll().where('agent_id', '=', agentId).where('superseded_at', 'is', null)
        .orderBy('binding_type').execute();
    },
    currentBinding(agentId: string, bindingType: string, q: Db = db) {
      return q.selectFrom('policy_bindings').selectAll().where('agent_id', '=', agentId).where('binding_type', '=', bindingType)
        .where('superseded_at', 'is', null).executeTakeFirst();
    },
    async bind(trx: Transaction<Database>, row: PolicyBindingsTable): Promise<void> {
      await trx.updateTable('policy_bindings').set({ superseded_at: row.bound_at })
        .where('agent_id', '=', row.agent_id).where('binding_type', '=', row.binding_type).where('superseded_at', 'is', null).execute();
      await trx.insertInto('policy_bindings').values(row).execute();
    },
    allBindings: (q: Db = db) => q.selectFrom('policy_bindings').selectAll().execute(),
    /**
     * The trust log entry a binding names (its canonical JSON), read in the caller's transaction: the
     * delegation checks its binding under the log's append lock, where a read outside the transaction
     * would wait for it (SQLite has one connection).
     */
    async logEntry(index: number, q: Db = db): Promise<{ kind: string; agent_id: string | null; data: Record<string, unknown> } | undefined> {
      const row = await q.selectFrom('trust_log_entries').select('entry').where('log_index', '=', index).executeTakeFirst();
      return row ? JSON.parse(row.entry) as { kind: string; agent_id: string | null; data: Record<string, unknown> } : undefined;
    },

    // ---- journal ----
    findCommitment(agentId: string, hash: string, q: Db = db) {
      return q.selectFrom('journal_commitments').selectAll().where('agent_id', '=', agentId).where('commitment_hash', '=', hash).executeTakeFirst();
    },
    async insertCommitment(trx: Transaction<Database>, row: JournalCommitmentsTable): Promise<void> {
      await trx.insertInto('journal_commitments').values(row).execute();
    },
    /** Newest first, keyset on log_index (before: only entries older than that index). */
    commitments(agentId: string, limit: number, before?: number) {
      let q = db.selectFrom('journal_commitments').selectAll().where('agent_id', '=', agentId);
      if (before !== undefined) q = q.where('log_index', '<', before);
      return q.orderBy('log_index', 'desc').limit(limit).execute();
    },
    async countCommitments(agentId: string): Promise<number> {
      const r = await db.selectFrom('journal_commitments').select((eb) => eb.fn.countAll<number>().as('n')).where('agent_id', '=', agentId).executeTakeFirstOrThrow();
      return Number(r.n);
    },
    allCommitments: (q: Db = db) => q.selectFrom('journal_commitments').selectAll().execute(),

    // ---- tool passports ----
    findTool(toolId: string, q: Db = db) {
      return q.selectFrom('tool_passports').selectAll().where('tool_id', '=', toolId).executeTakeFirst();
    },
    async countActiveTools(agentId: string, q: Db = db): Promise<number> {
      const r = await q.selectFrom('tool_passports').select((eb) => eb.fn.countAll<number>().as('n'))
        .where('agent_id', '=', agentId).where('revoked_at', 'is', null).executeTakeFirstOrThrow();
      return Number(r.n);
    },
    async insertTool(trx: Transaction<Database>, row: ToolPassportsTable): Promise<void> {
      await trx.insertInto('tool_passports').values(row).execute();
    },
    async rotateTool(trx: Transaction<Database>, toolId: string, set: { public_key_pem: string; key_version: number; rotated_at: number; rotated_log_index: number }): Promise<void> {
      await trx.updateTable('tool_passports').set(set).where('tool_id', '=', toolId).execute();
    },
    async revokeTool(trx: Transaction<Database>, toolId: string, at: number, logIndex: number): Promise<void> {
      await trx.updateTable('tool_passports').set({ revoked_at: at, revoked_log_index: logIndex }).where('tool_id', '=', toolId).where('revoked_at', 'is', null).execute();
    },
    allTools: (q: Db = db) => q.selectFrom('tool_passports').selectAll().execute(),

    // ---- delegations ----
    async insertDelegation(trx: Transaction<Database>, row: DelegationsTable): Promise<void> {
      await trx.insertInto('delegations').values(row).execute();
    },
    allDelegations: (q: Db = db) => q.selectFrom('delegations').selectAll().execute(),
    /** The tools column of the delegated keys (parity). */
    delegatedKeyTools: (q: Db = db) => q.selectFrom('api_keys').select(['key_id', 'agent_id', 'tools', 'scopes', 'label', 'expires_at'])
      .where('kind', '=', 'scoped').where('tools', 'is not', null).execute(),

    /** Adoption: counts of the declarations. */
    async counts(since: number) {
      const n = async (table: 'consolidation_policies' | 'policy_bindings' | 'journal_commitments' | 'tool_passports' | 'delegations', where: (q: any) => any) =>
        Number((await where(db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n'))).executeTakeFirstOrThrow()).n);
      return {
        consolidation_policies: await n('consolidation_policies', (q) => q.where('superseded_at', 'is', null)),
        policy_bindings: await n('policy_bindings', (q) => q.where('superseded_at', 'is', null)),
        journal_commitments: await n('journal_commitments', (q) => q),
        journal_commitments_in_window: await n('journal_commitments', (q) => q.where('committed_at', '>=', since)),
        tool_passports_active: await n('tool_passports', (q) => q.where('revoked_at', 'is', null)),
        delegations_in_window: await n('delegations', (q) => q.where('created_at', '>=', since)),
      };
    },
  };
}

export type DeclarationsStore = ReturnType<typeof createDeclarationsStore>;
