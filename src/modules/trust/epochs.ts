/**
 * Custody epochs: an agent's life as a sequence of epochs. Epoch 1 opens at registration; custody
 * transfer and recovery (later) close the open epoch and open the next. Reputation and other facts
 * about an agent carry the epoch they belong to.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { AgentEpochsTable } from '../../infra/db/tables/trust';
import { iso } from '../../lib/clock';
import type { TrustLog } from './log';

type Db = Kysely<Database> | Transaction<Database>;

/** Told, in the transaction of a custody change, that the agent's open epoch rolled over (the directory's rank restarts with the reputation). */
export type RollOverListener = (trx: Transaction<Database>, agentId: string, at: number) => Promise<void>;

export function createEpochs(db: Kysely<Database>, log: TrustLog) {
  const rollListeners: RollOverListener[] = [];
  /** Opens epoch `epoch` for the agent and records it in the log, inside `trx`. */
  async function open(trx: Transaction<Database>, agentId: string, epoch: number, at: number, openedBy: string): Promise<void> {
    const appended = await log.append(trx, { kind: 'epoch.opened', agentId, epoch, at, data: { opened_by: openedBy } });
    await trx.insertInto('agent_epochs')
      .values({ agent_id: agentId, epoch, opened_at: at, opened_by: openedBy, closed_at: null, open_log_index: appended.index })
      .execute();
  }

  return {
    open,

    /** Epoch 1 at registration, in the registration's transaction. */
    openFirst: (trx: Transaction<Database>, agentId: string, at: number) => open(trx, agentId, 1, at, 'registration'),

    /**
     * A custody change (a completed recovery or custody transfer), inside `trx`: closes the open epoch
     * (`epoch.closed`, closed_by `reason`) and opens the next (`epoch.opened`, opened_by `reason`).
     */
    async rollOver(trx: Transaction<Database>, agentId: string, at: number, reason: string) {
      const row = await trx.selectFrom('agent_epochs').select('epoch').where('agent_id', '=', agentId).where('closed_at', 'is', null)
        .orderBy('epoch', 'desc').limit(1).executeTakeFirst();
      if (!row) throw new Error(`agent ${agentId} has no open custody epoch`);
      const closedEntry = await log.append(trx, { kind: 'epoch.closed', agentId, epoch: row.epoch, at, data: { closed_by: reason } });
      await trx.updateTable('agent_epochs').set({ closed_at: at }).where('agent_id', '=', agentId).where('epoch', '=', row.epoch).execute();
      await open(trx, agentId, row.epoch + 1, at, reason);
      for (const listener of rollListeners) await listener(trx, agentId, at);
      return { closed: row.epoch, opened: row.epoch + 1, closedLogIndex: closedEntry.index };
    },

    /** A module that keeps something per current epoch listens here (built after the trust module). */
    onRollOver(listener: RollOverListener) {
      rollListeners.push(listener);
    },

    /** The open epoch's number (1 for an agent the log has not seen yet). */
    async current(agentId: string, trx: Db = db): Promise<number> {
      const row = await trx.selectFrom('agent_epochs').select('epoch').where('agent_id', '=', agentId).where('closed_at', 'is', null)
        .orderBy('epoch', 'desc').limit(1).executeTakeFirst();
      return row?.epoch ?? 1;
    },

    /** The open epoch (number and opening time) of many agents; an agent the log has not seen yet is absent. */
    async openOf(agentIds: string[], trx: Db = db): Promise<Map<string, { epoch: number; openedAt: number }>> {
      const out = new Map<string, { epoch: number; openedAt: number }>();
      for (let i = 0; i < agentIds.length; i += 500) {
        const rows = await trx.selectFrom('agent_epochs').select(['agent_id', 'epoch', 'opened_at'])
          .where('agent_id', 'in', agentIds.slice(i, i + 500)).where('closed_at', 'is', null).execute();
        for (const r of rows) {
          const had = out.get(r.agent_id);
          if (!had || r.epoch > had.epoch) out.set(r.agent_id, { epoch: r.epoch, openedAt: Number(r.opened_at) });
        }
      }
      return out;
    },

    list(agentId: string): Promise<AgentEpochsTable[]> {
      return db.selectFrom('agent_epochs').selectAll().where('agent_id', '=', agentId).orderBy('epoch').execute();
    },

    /**
     * Agents whose epoch 1 predates the log (rows made by the migration) get their `epoch.opened`
     * entry, each in its own transaction; the locked head serialises this with other instances and
     * the null check under it makes it happen once.
     */
    async backfill(): Promise<number> {
      let done = 0;
      for (;;) {
        const batch = await db.selectFrom('agent_epochs').select(['agent_id', 'epoch', 'opened_at', 'opened_by'])
          .where('open_log_index', 'is', null).orderBy('opened_at').orderBy('agent_id').limit(100).execute();
        if (batch.length === 0) return done;
        for (const e of batch) {
          await db.transaction().execute(async (trx) => {
            await log.lockHeadFor(trx);
            const still = await trx.selectFrom('agent_epochs').select('open_log_index')
              .where('agent_id', '=', e.agent_id).where('epoch', '=', e.epoch).executeTakeFirst();
            if (!still || still.open_log_index !== null) return;
            const appended = await log.append(trx, { kind: 'epoch.opened', agentId: e.agent_id, epoch: e.epoch, at: Number(e.opened_at), data: { opened_by: e.opened_by } });
            await trx.updateTable('agent_epochs').set({ open_log_index: appended.index })
              .where('agent_id', '=', e.agent_id).where('epoch', '=', e.epoch).execute();
            done++;
          });
        }
      }
    },

    /** Public view of an epoch. */
    view(e: AgentEpochsTable) {
      return {
        epoch: e.epoch, opened_at: iso(Number(e.opened_at)), opened_by: e.opened_by,
        closed_at: e.closed_at === null ? null : iso(Number(e.closed_at)),
        open_log_index: e.open_log_index === null ? null : Number(e.open_log_index),
      };
    },
  };
}

export type Epochs = ReturnType<typeof createEpochs>;
