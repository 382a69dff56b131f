import type { Kysely } from 'kysely';

/**
 * An agent's challenges in issue order: challenge creation keeps only an agent's newest ones (a
 * public route, so the table must not grow at the rate anyone can call it), and that trim reads this.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('passport_challenges_agent_idx').on('passport_challenges').columns(['agent_id', 'issued_at']).execute();
}

export async function down(): Promise<void> {
  throw new Error('svc migrations are forward-only');
}
