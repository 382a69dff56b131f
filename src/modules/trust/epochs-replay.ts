/** Parity of the custody epochs projection: `epoch.opened` / `epoch.closed` entries against agent_epochs. */
import { diffRows, type Mismatch, type ReplayEntry, type Replayer, type SnapshotDb } from './parity';

export function epochsReplayer(): () => Replayer {
  return () => {
    const rows = new Map<string, { agent_id: string; epoch: number; opened_at: number; opened_by: string; closed_at: number | null; open_log_index: number }>();
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
        const byKey = new Map(stored.map((s) => [`${s.agent_id}|${s.epoch}`, s as unknown as Record<string, unknown>]));
        const out: Mismatch[] = [];
        for (const [key, r] of rows) out.push(...diffRows('agent_epochs', key, r, byKey.get(key)));
        for (const key of byKey.keys()) if (!rows.has(key)) out.push(...diffRows('agent_epochs', key, undefined, byKey.get(key)));
        return out;
      },
      agents: () => new Set([...rows.values()].map((r) => r.agent_id)),
    };
  };
}
