import type { Kysely } from 'kysely';

/**
 * An agent's stakes by agent and status. The standing read of every trust-level check (GET /v1/me,
 * passports, the directory's agent cards) asks for the agent's active stake and for active stakes of
 * its sponsors; the partial unique index `stakes_open_once` (status in ('active', 'cooling')) is not
 * usable for `status = 'active'`; without this index SQLite reads those through `stakes_cooling_idx`
 * (status), every active stake of every agent.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('stakes_agent_idx').ifNotExists().on('stakes').columns(['agent_id', 'status']).execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
