/**
 * SQL of the custody module: covenants and recovery keys (projections of the covenant entries),
 * recovery intents, channel secrets and codes, pending custody transfers. Every per-agent query is
 * keyed by agent_id.
 */
import type SQLite from 'better-sqlite3';
import type { Kysely, Transaction } from 'kysely';
import { prepared } from '../../infra/db/prepared';
import type { Database } from '../../infra/db/schema';
import type { CovenantsTable, RecoveryKeysTable } from '../../infra/db/tables/core';
import type { CustodyTransfersTable, RecoveryIntentsTable } from '../../infra/db/tables/custody';

type Db = Kysely<Database> | Transaction<Database>;

export function createCustodyStore(db: Kysely<Database>, sqlite?: SQLite.Database) {
  // Read by GET /v1/me, passports and every paid charge: compiled once.
  const stagedQ = prepared(db, { agent: '\u0000agent', now: -987_654_321_000_610 }, (s) => db.selectFrom('recovery_intents').select('staged_until')
    .where('agent_id', '=', s.agent).where('staged_until', '>', s.now).orderBy('staged_until', 'desc').limit(1), sqlite);
  return {
    db,

    activeCovenant(agentId: string, trx: Db = db) {
      return trx.selectFrom('covenants').selectAll().where('agent_id', '=', agentId).where('superseded_at', 'is', null).executeTakeFirst();
    },

    recoveryKey(agentId: string, trx: Db = db) {
      return trx.selectFrom('recovery_keys').selectAll().where('agent_id', '=', agentId).executeTakeFirst();
    },

    async insertCovenant(trx: Transaction<Database>, row: CovenantsTable): Promise<void> {
      await trx.insertInto('covenants').values(row).execute();
    },

    async supersede(trx: Transaction<Database>, covenantId: string, at: number): Promise<void> {
      await trx.updateTable('covenants').set({ superseded_at: at }).where('covenant_id', '=', covenantId).execute();
    },

    async setBoundLogIndex(trx: Transaction<Database>, covenantId: string, index: number): Promise<void> {
      await trx.updateTable('covenants').set({ bound_log_index: index }).where('covenant_id', '=', covenantId).execute();
    },

    /** The recovery key of the agent becomes `row` (null: none). */
    async setRecoveryKey(trx: Transaction<Database>, agentId: string, row: RecoveryKeysTable | null): Promise<void> {
      await trx.deleteFrom('recovery_keys').where('agent_id', '=', agentId).execute();
      if (row) await trx.insertInto('recovery_keys').values(row).execute();
    },

    /** Covenants bound before the trust log had their entries (oldest first). */
    unlogged(limit: number) {
      return db.selectFrom('covenants').selectAll().where('bound_log_index', 'is', null).orderBy('bound_at').orderBy('covenant_id').limit(limit).execute();
    },

    async saveChannelSecret(trx: Transaction<Database>, row: { covenant_id: string; agent_id: string; secret: string; created_at: number }): Promise<void> {
      await trx.insertInto('covenant_channel_secrets').values(row).execute();
    },

    async channelSecret(covenantId: string): Promise<string | undefined> {
      return (await db.selectFrom('covenant_channel_secrets').select('secret').where('covenant_id', '=', covenantId).executeTakeFirst())?.secret;
    },

    // ---- recovery intents ----

    /** The agent's newest intent (the log orders them). */
    latestIntent(agentId: string, trx: Db = db) {
      return trx.selectFrom('recovery_intents').selectAll().where('agent_id', '=', agentId)
        .orderBy('opened_log_index', 'desc').limit(1).executeTakeFirst();
    },

    intent(intentId: string, trx: Db = db) {
      return trx.selectFrom('recovery_intents').selectAll().where('intent_id', '=', intentId).executeTakeFirst();
    },

    listIntents(agentId: string, limit: number) {
      return db.selectFrom('recovery_intents').selectAll().where('agent_id', '=', agentId)
        .orderBy('opened_log_index', 'desc').limit(limit).execute();
    },

    async countIntents(agentId: string): Promise<number> {
      const r = await db.selectFrom('recovery_intents').select((eb) => eb.fn.countAll<number>().as('n')).where('agent_id', '=', agentId).executeTakeFirstOrThrow();
      return Number(r.n);
    },

    async insertIntent(trx: Transaction<Database>, row: RecoveryIntentsTable): Promise<void> {
      await trx.insertInto('recovery_intents').values(row).execute();
    },

    async updateIntent(trx: Transaction<Database>, intentId: string, patch: Partial<RecoveryIntentsTable>): Promise<void> {
      await trx.updateTable('recovery_intents').set(patch).where('intent_id', '=', intentId).execute();
    },

    /** The end of the agent's staged resurrection when it is after `now`. */
    async stagedUntil(agentId: string, now: number, trx?: Db): Promise<number | undefined> {
      const [r] = await stagedQ({ agent: agentId, now }, trx);
      return r?.staged_until === undefined || r.staged_until === null ? undefined : Number(r.staged_until);
    },

    // ---- channel codes ----

    async insertCode(row: { code_id: string; agent_id: string; binding_sha256: string; code_sha256: string; created_at: number; expires_at: number }): Promise<void> {
      await db.insertInto('recovery_channel_codes').values({ ...row, used_at: null }).execute();
      // Old codes are of no use: the table holds what is live, not a history.
      await db.deleteFrom('recovery_channel_codes').where('agent_id', '=', row.agent_id).where('expires_at', '<', row.created_at).execute();
    },

    async deleteCode(codeId: string): Promise<void> {
      await db.deleteFrom('recovery_channel_codes').where('code_id', '=', codeId).execute();
    },

    /** Marks the unused, unexpired code for this binding used; true for the one caller that consumed it. */
    async consumeCode(agentId: string, bindingSha256: string, codeSha256: string, now: number): Promise<boolean> {
      const r = await db.updateTable('recovery_channel_codes').set({ used_at: now })
        .where('agent_id', '=', agentId).where('binding_sha256', '=', bindingSha256).where('code_sha256', '=', codeSha256)
        .where('used_at', 'is', null).where('expires_at', '>', now).executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },

    // ---- custody transfers ----

    async insertTransfer(row: CustodyTransfersTable): Promise<void> {
      await db.transaction().execute(async (trx) => {
        // One pending transfer per agent: a new intent replaces the ones not completed.
        await trx.deleteFrom('custody_transfers').where('agent_id', '=', row.agent_id).where('completed_at', 'is', null).execute();
        await trx.insertInto('custody_transfers').values(row).execute();
      });
    },

    transfer(transferId: string, agentId: string, trx: Db = db) {
      return trx.selectFrom('custody_transfers').selectAll().where('transfer_id', '=', transferId).where('agent_id', '=', agentId).executeTakeFirst();
    },

    async completeTransfer(trx: Transaction<Database>, transferId: string, at: number): Promise<boolean> {
      const r = await trx.updateTable('custody_transfers').set({ completed_at: at }).where('transfer_id', '=', transferId).where('completed_at', 'is', null).executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },

    async dropPendingTransfers(trx: Transaction<Database>, agentId: string): Promise<void> {
      await trx.deleteFrom('custody_transfers').where('agent_id', '=', agentId).where('completed_at', 'is', null).execute();
    },

    // ---- parity and adoption ----

    async all(trx: Db) {
      const [covenants, keys, intents] = await Promise.all([
        trx.selectFrom('covenants').selectAll().where('bound_log_index', 'is not', null).execute(),
        trx.selectFrom('recovery_keys').selectAll().execute(),
        trx.selectFrom('recovery_intents').selectAll().execute(),
      ]);
      return { covenants, keys, intents };
    },

    async intentCounts(now: number) {
      const lapsing = (eb: any) => eb.and([eb('status', 'in', ['open', 'initiated']), eb('lapses_at', '<=', now)]);
      const [byStatus, lapsed, staged] = await Promise.all([
        db.selectFrom('recovery_intents').select(['status', (eb) => eb.fn.countAll<number>().as('n')]).where((eb) => eb.not(lapsing(eb))).groupBy('status').execute(),
        db.selectFrom('recovery_intents').select((eb) => eb.fn.countAll<number>().as('n')).where(lapsing).executeTakeFirstOrThrow(),
        db.selectFrom('recovery_intents').select((eb) => eb.fn.countAll<number>().as('n')).where('staged_until', '>', now).executeTakeFirstOrThrow(),
      ]);
      const states: Record<string, number> = { open: 0, initiated: 0, vetoed: 0, completed: 0, lapsed: Number(lapsed.n) };
      for (const r of byStatus) states[r.status] = Number(r.n);
      return { recovery_intents_by_state: states, staged_resurrections_active: Number(staged.n) };
    },

    /** The completed intent whose staged resurrection runs at `now` (its closing entry is the trace's evidence). */
    stagedIntent(agentId: string, now: number) {
      return db.selectFrom('recovery_intents').selectAll().where('agent_id', '=', agentId).where('staged_until', '>', now)
        .orderBy('staged_until', 'desc').limit(1).executeTakeFirst();
    },
  };
}

export type CustodyStore = ReturnType<typeof createCustodyStore>;
