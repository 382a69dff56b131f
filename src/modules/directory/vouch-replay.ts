/** Parity of the vouches projection: vouch.given / vouch.revoked entries against the vouches table. */
import type { VouchesTable } from '../../infra/db/tables/trust';
import { diffKeyed, type Mismatch, type ReplayEntry, type Replayer, type SnapshotDb } from '../trust/parity';
import type { VouchStore } from './vouch-store';

const shape = (r: VouchesTable) => ({
  target_agent_id: r.target_agent_id, voucher_agent_id: r.voucher_agent_id, skill: r.skill, epoch: r.epoch, weight: r.weight,
  created_at: r.created_at, created_log_index: r.created_log_index, revoked_at: r.revoked_at, revoked_log_index: r.revoked_log_index,
});

export function vouchReplayer(store: VouchStore): () => Replayer {
  return () => {
    const rows = new Map<string, VouchesTable>();
    return {
      feed(e: ReplayEntry) {
        const d = e.data;
        if (e.kind === 'vouch.given' && e.agent_id && e.epoch !== null) {
          rows.set(String(d.vouch_id), {
            vouch_id: String(d.vouch_id), target_agent_id: e.agent_id, voucher_agent_id: String(d.voucher_agent_id), skill: String(d.skill),
            epoch: e.epoch, weight: Number(d.voucher_weight), created_at: e.at, created_log_index: e.index, revoked_at: null, revoked_log_index: null,
          });
        } else if (e.kind === 'vouch.revoked') {
          const r = rows.get(String(d.vouch_id));
          if (r) rows.set(r.vouch_id, { ...r, revoked_at: e.at, revoked_log_index: e.index });
        }
      },
      async diff(_now: number, db: SnapshotDb): Promise<Mismatch[]> {
        return diffKeyed('vouches', rows, await store.all(db), (r) => r.vouch_id, shape);
      },
      agents: () => new Set([...rows.values()].flatMap((r) => [r.target_agent_id, r.voucher_agent_id])),
    };
  };
}
