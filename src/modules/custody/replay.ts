/**
 * Parity of the custody projections, rebuilt from the log: covenants (`covenant.bound`,
 * `covenant.amended`, ended by `custody.transferred`), recovery keys (by the SHA-256 of the key and
 * its enrolment time) and recovery intents (`recovery.intent.opened` / `.vetoed`,
 * `recovery.initiated`, `recovery.completed`).
 */
import { canonicalJson } from '../../infra/tlog/jcs';
import type { Mismatch, ReplayEntry, Replayer, SnapshotDb } from '../trust/parity';
import { diffMaps } from '../trust/parity';
import { keySha256, publicParams } from './model';
import type { CustodyStore } from './store';

interface CovenantRow { agent_id: string; template_id: string; params: string; bound_at: number; superseded_at: number | null; bound_log_index: number }
interface KeyRow { sha256: string; enrolled_at: number }
interface IntentRow {
  agent_id: string; epoch: number; tier: string; new_public_key_sha256: string; status: string; opened_at: number; veto_deadline: number; lapses_at: number;
  opened_log_index: number; vetoed_at: number | null; initiated_at: number | null; completed_at: number | null; closed_log_index: number | null; staged_until: number | null;
}

const ms = (v: unknown): number | null => (typeof v === 'string' ? Date.parse(v) : null);
const canonical = (v: unknown) => canonicalJson(v).toString('utf8');

export function custodyReplayer(store: CustodyStore): () => Replayer {
  return () => {
    const covenants = new Map<string, CovenantRow>();
    const keys = new Map<string, KeyRow>();
    const intents = new Map<string, IntentRow>();
    const agents = new Set<string>();

    return {
      feed(e: ReplayEntry) {
        const d = e.data;
        if (!e.agent_id) return;
        switch (e.kind) {
          case 'covenant.bound':
          case 'covenant.amended': {
            const prev = d.supersedes_covenant_id;
            if (typeof prev === 'string' && covenants.has(prev)) covenants.get(prev)!.superseded_at = e.at;
            covenants.set(String(d.covenant_id), {
              agent_id: e.agent_id, template_id: String(d.template_id), params: canonical(d.params), bound_at: e.at, superseded_at: null, bound_log_index: e.index,
            });
            const k = d.recovery_key as { sha256: string; enrolled_at: string } | null;
            if (k) keys.set(e.agent_id, { sha256: k.sha256, enrolled_at: ms(k.enrolled_at) as number });
            else keys.delete(e.agent_id);
            agents.add(e.agent_id);
            break;
          }
          case 'custody.transferred': {
            const prev = d.superseded_covenant_id;
            if (typeof prev === 'string' && covenants.has(prev)) covenants.get(prev)!.superseded_at = e.at;
            keys.delete(e.agent_id);
            break;
          }
          case 'recovery.intent.opened':
            intents.set(String(d.intent_id), {
              agent_id: e.agent_id, epoch: e.epoch as number, tier: String(d.tier), new_public_key_sha256: String(d.new_passport_public_key_sha256), status: 'open',
              opened_at: e.at, veto_deadline: ms(d.veto_deadline) as number, lapses_at: ms(d.lapses_at) as number, opened_log_index: e.index,
              vetoed_at: null, initiated_at: null, completed_at: null, closed_log_index: null, staged_until: null,
            });
            agents.add(e.agent_id);
            break;
          case 'recovery.intent.vetoed': {
            const i = intents.get(String(d.intent_id));
            if (i) Object.assign(i, { status: 'vetoed', vetoed_at: e.at, closed_log_index: e.index });
            break;
          }
          case 'recovery.initiated': {
            const i = intents.get(String(d.intent_id));
            if (i) Object.assign(i, { status: 'initiated', initiated_at: e.at });
            break;
          }
          case 'recovery.completed': {
            const i = intents.get(String(d.intent_id));
            if (i) Object.assign(i, { status: 'completed', completed_at: e.at, closed_log_index: e.index, staged_until: ms(d.staged_resurrection_until) });
            break;
          }
        }
      },

      async diff(_now: number, db: SnapshotDb): Promise<Mismatch[]> {
        const stored = await store.all(db);
        const out: Mismatch[] = [];
        const byCovenant = new Map(stored.covenants.map((c) => [c.covenant_id, {
          agent_id: c.agent_id, template_id: c.template_id, params: canonical(publicParams(c.template_id, JSON.parse(c.params) as Record<string, unknown>)),
          bound_at: c.bound_at, superseded_at: c.superseded_at, bound_log_index: c.bound_log_index,
        } as Record<string, unknown>]));
        out.push(...diffMaps('covenants', covenants, byCovenant));

        const byKey = new Map(stored.keys.map((k) => [k.agent_id, { sha256: keySha256(k.public_key_pem), enrolled_at: k.enrolled_at } as Record<string, unknown>]));
        out.push(...diffMaps('recovery_keys', keys, byKey));

        const byIntent = new Map(stored.intents.map((i) => {
          const { intent_id: id, new_public_key_pem: pem, ...rest } = i;
          return [id, { ...rest, new_public_key_sha256: keySha256(pem) === rest.new_public_key_sha256 ? rest.new_public_key_sha256 : `pem of another key (${keySha256(pem)})` } as Record<string, unknown>];
        }));
        out.push(...diffMaps('recovery_intents', intents, byIntent));
        return out;
      },

      agents: () => agents,
    };
  };
}
