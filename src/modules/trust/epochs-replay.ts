/** Parity of the custody epochs projection: `epoch.opened` / `epoch.closed` entries against agent_epochs. */
import { diffKeyed, type Mismatch, type ReplayEntry, type Replayer, type SnapshotDb } from './parity';

interface EpochRow { agent_id: string; epoch: number; opened_at: number; opened_by: string; closed_at: number | null; open_log_index: number | null }

const epochKey = (r: EpochRow) => `${r.agent_id}|${r.epoch}`;
const epochShape = (r: EpochRow) => ({ ...r });

export function epochsReplayer(): () => Replayer {
  return () => {
    const rows = new Map<string, EpochRow>();
    return {
      feed(e: ReplayEntry) {
        if (!e.agent_id || e.epoch === null) return;
        const key = `${e.agent_id}|${e.epoch}`;
        if (e.kind === 'epoch.opened') {
          rows.set(key, { agent_id: e.agent_id, epoch: e.epoch, opened_at: e.at, opened_by: String(e.data.opened_by), closed_at: null, open_log_index: e.index });
        } else if (e.kind === 'epoch.closed') {
          const r = rows.get(key);
          if (r) r.closed_at = e.at;
        }
      },
      async diff(_now: number, db: SnapshotDb): Promise<Mismatch[]> {
        // Epochs made before the log existed and not yet appended (open_log_index null) are not facts of the log yet.
        const stored = await db.selectFrom('agent_epochs').selectAll().where('open_log_index', 'is not', null).execute();
        return diffKeyed('agent_epochs', rows, stored.map((r) => ({
          agent_id: r.agent_id, epoch: r.epoch, opened_at: r.opened_at, opened_by: r.opened_by, closed_at: r.closed_at, open_log_index: r.open_log_index,
        })), epochKey, epochShape);
      },
      agents: () => new Set([...rows.values()].map((r) => r.agent_id)),
    };
  };
}
