/**
 * Parity of stakes, sponsorships and slashes: rebuilt from the log's stake.* and sponsorship.*
 * entries and compared with the stored rows; each stake's credit is also compared with its lot in
 * the credit ledger (the money and the trust fact must agree).
 */
import type { SlashesTable, SponsorshipsTable, StakesTable } from '../../infra/db/tables/stake';
import { diffKeyed, type Mismatch, type ReplayEntry, type Replayer, type SnapshotDb } from '../trust/parity';
import type { StakeStore } from './store';

const num = (v: unknown): number => Number(v);

const stakeShape = (r: StakesTable) => ({
  agent_id: r.agent_id, tier: r.tier, units: r.units, status: r.status, staked_at: r.staked_at, locked_until: r.locked_until,
  cooling_until: r.cooling_until, ended_at: r.ended_at, released_units: r.released_units, created_log_index: r.created_log_index, updated_log_index: r.updated_log_index,
});
const sponsorshipShape = (r: SponsorshipsTable) => ({
  sponsor_agent_id: r.sponsor_agent_id, ward_agent_id: r.ward_agent_id, created_at: r.created_at, created_log_index: r.created_log_index,
  revoke_requested_at: r.revoke_requested_at, revokes_at: r.revokes_at, revoke_log_index: r.revoke_log_index, ring_flagged_at: r.ring_flagged_at, ring_log_index: r.ring_log_index,
});
const slashShape = (r: SlashesTable) => ({
  agent_id: r.agent_id, harmed_agent_id: r.harmed_agent_id, requested_units: r.requested_units, taken_units: r.taken_units, harmed_units: r.harmed_units,
  insurance_units: r.insurance_units, burned_units: r.burned_units, decided_at: r.decided_at, log_index: r.log_index,
});

interface Take { agent_id: string; stake_id: string; taken_units: number; harmed_units: number; insurance_units: number; burned_units: number }

export function stakeReplayer(store: StakeStore): () => Replayer {
  return () => {
    const stakes = new Map<string, StakesTable>();
    const sponsorships = new Map<string, SponsorshipsTable>();
    const slashes = new Map<string, SlashesTable>();
    const set = (id: string, patch: Partial<StakesTable>) => {
      const s = stakes.get(id);
      if (s) stakes.set(id, { ...s, ...patch });
    };
    const feed = (e: ReplayEntry) => {
      const d = e.data;
      const id = String(d.stake_id ?? d.sponsorship_id ?? '');
      switch (e.kind) {
        case 'stake.locked': {
          const s = stakes.get(id);
          const patch = { tier: String(d.tier), units: num(d.units_total), locked_until: num(d.locked_until), updated_log_index: e.index };
          if (s) set(id, patch);
          else {
            stakes.set(id, {
              stake_id: id, agent_id: e.agent_id!, status: 'active', staked_at: e.at, cooling_until: null, ended_at: null, released_units: null,
              created_log_index: e.index, ...patch,
            });
          }
          break;
        }
        case 'stake.unstake_requested':
          set(id, { status: 'cooling', cooling_until: num(d.cooling_until), updated_log_index: e.index });
          break;
        case 'stake.released':
          set(id, { status: 'released', units: 0, ended_at: e.at, released_units: num(d.units_returned), updated_log_index: e.index });
          break;
        case 'stake.slashed': {
          const takes = d.takes as Take[];
          for (const t of takes) {
            const left = (stakes.get(t.stake_id)?.units ?? 0) - num(t.taken_units);
            set(t.stake_id, left > 0 ? { units: left, updated_log_index: e.index } : { units: 0, status: 'slashed', ended_at: e.at, updated_log_index: e.index });
          }
          const sum = (k: keyof Take) => takes.reduce((n, t) => n + num(t[k]), 0);
          slashes.set(String(d.slash_id), {
            slash_id: String(d.slash_id), agent_id: e.agent_id!, harmed_agent_id: String(d.harmed_agent_id), reason: '', requested_units: num(d.requested_units),
            taken_units: sum('taken_units'), harmed_units: sum('harmed_units'), insurance_units: sum('insurance_units'), burned_units: sum('burned_units'),
            takes: '', decided_at: e.at, log_index: e.index,
          });
          break;
        }
        case 'sponsorship.created':
          sponsorships.set(id, {
            sponsorship_id: id, sponsor_agent_id: String(d.sponsor_agent_id), ward_agent_id: e.agent_id!, created_at: e.at, created_log_index: e.index,
            revoke_requested_at: null, revokes_at: null, revoke_log_index: null, ring_flagged_at: null, ring_log_index: null,
          });
          break;
        case 'sponsorship.revoked': {
          const s = sponsorships.get(id);
          if (s) sponsorships.set(id, { ...s, revoke_requested_at: e.at, revokes_at: num(d.revokes_at), revoke_log_index: e.index });
          break;
        }
        case 'sponsorship.ring_flagged':
          for (const sid of d.sponsorship_ids as string[]) {
            const s = sponsorships.get(sid);
            if (s) sponsorships.set(sid, { ...s, ring_flagged_at: e.at, ring_log_index: e.index });
          }
          break;
        default:
      }
    };
    return {
      feed,
      async diff(_now: number, db: SnapshotDb): Promise<Mismatch[]> {
        const stored = await store.all(db);
        const out = [
          ...diffKeyed('stakes', stakes, stored.stakes, (r) => r.stake_id, stakeShape),
          ...diffKeyed('sponsorships', sponsorships, stored.sponsorships, (r) => r.sponsorship_id, sponsorshipShape),
          ...diffKeyed('slashes', slashes, stored.slashes, (r) => r.slash_id, slashShape),
        ];
        // The money: each stake's lot in the credit ledger holds what the stake says it holds.
        const ids = [...stakes.keys()];
        const lots = ids.length === 0 ? [] : await db.selectFrom('credit_lots').select(['lot_id', 'remaining_units']).where('lot_id', 'in', ids).execute();
        const held = new Map(lots.map((l) => [l.lot_id, Number(l.remaining_units)]));
        for (const [id, s] of stakes) {
          if ((held.get(id) ?? 0) !== s.units) out.push({ projection: 'credit_lots', key: id, field: 'remaining_units', expected: s.units, stored: held.get(id) ?? 'no lot' });
        }
        return out;
      },
      agents: () => new Set([...stakes.values()].map((s) => s.agent_id).concat([...sponsorships.values()].flatMap((s) => [s.sponsor_agent_id, s.ward_agent_id]))),
    };
  };
}
