/**
 * SQL of billing accounts (the per-agent lock point) and webhook bookkeeping.
 * Concurrency: every change to an agent's credit or counters happens in a transaction that first
 * locks its billing_accounts row (SELECT ... FOR UPDATE on PostgreSQL, so several svc instances on
 * one database serialise per agent; SQLite has one writer connection per process, so a transaction
 * is already exclusive). Locks are taken in agent_id order so batches never deadlock.
 */
import type { Transaction } from 'kysely';
import type { DatabaseHandle } from '../../infra/db/database';
import { engineOf, isUniqueViolation } from '../../infra/db/dialect';
import type { Database } from '../../infra/db/schema';
import { normalizeAccount, type Account, type LockedAccount } from './account';
import type { Db } from './ledger-store';
import { createMeterSql } from './meter-sql';

export function createBillingStore({ db, sqlite, commits }: Pick<DatabaseHandle, 'db' | 'sqlite' | 'commits'>) {
  const engine = engineOf(db);
  /**
   * Locks these agents' accounts in agent_id order (so batches never deadlock), each with the charge
   * path's compiled lock: one UPDATE that rotates the stamp and returns the row (creating the account
   * on first use). The UPDATE holds the row lock to the end of the transaction on PostgreSQL.
   */
  async function lockAccounts(trx: Transaction<Database>, agentIds: string[], now: number): Promise<Map<string, LockedAccount>> {
    const out = new Map<string, LockedAccount>();
    for (const id of [...new Set(agentIds)].sort()) out.set(id, await meterSql.lock(trx, id, now));
    return out;
  }

  const meterSql = createMeterSql(db, sqlite);
  return {
    db,
    engine,
    /** Resolves once every commit so far is on disk (after `withLocks(..., { deferFlush: true })`). */
    durable: () => commits.durable(),
    /** The charge's compiled statements (meter-sql.ts); direct on the SQLite connection when given. */
    sql: meterSql,
    /**
     * Runs fn in one transaction holding the locks of these agents' accounts. Every locked account
     * gets a fresh meter_stamp, so in-memory metering state of these agents is reloaded afterwards.
     * `deferFlush`: the commit does not wait for the disk; the caller awaits `durable()` before it
     * acknowledges anything (group commit, infra/db/commit-sync.ts).
     */
    async withLocks<T>(
      agentIds: string[], now: number, fn: (trx: Transaction<Database>, accounts: Map<string, LockedAccount>) => Promise<T>,
      opts: { deferFlush?: boolean } = {},
    ): Promise<T> {
      const body = async (trx: Transaction<Database>) => fn(trx, await lockAccounts(trx, agentIds, now));
      return opts.deferFlush ? commits.transaction(body) : db.transaction().execute(body);
    },

    async getAccount(agentId: string): Promise<Account | undefined> {
      const r = await db.selectFrom('billing_accounts').selectAll().where('agent_id', '=', agentId).executeTakeFirst();
      return r ? normalizeAccount(r) : undefined;
    },

    findAgentByCustomer(customerId: string) {
      return db.selectFrom('billing_accounts').select('agent_id').where('payment_customer_id', '=', customerId).executeTakeFirst();
    },

    updateAccount(trx: Db, agentId: string, patch: Partial<Omit<Account, 'agent_id' | 'created_at'>>, now: number) {
      return trx.updateTable('billing_accounts').set({ ...patch, updated_at: now }).where('agent_id', '=', agentId).execute();
    },

    /** Records a webhook event id; false when it was recorded before (delivered again). */
    async recordEvent(trx: Db, eventId: string, type: string, now: number): Promise<boolean> {
      const seen = await trx.selectFrom('billing_webhook_events').select('event_id').where('event_id', '=', eventId).executeTakeFirst();
      if (seen) return false;
      try {
        await trx.insertInto('billing_webhook_events').values({ event_id: eventId, type, received_at: now }).execute();
        return true;
      } catch (e) {
        if (isUniqueViolation(e)) return false;
        throw e;
      }
    },
  };
}

export type BillingStore = ReturnType<typeof createBillingStore>;
