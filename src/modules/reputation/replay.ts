/** Parity of the reputation projections: rebuilt from the log's reputation entries, compared with the stored rows. */
import { sha256hex } from '../../lib/hash';
import type { ReputationAggregatesTable, ReputationDayBucketsTable, ReputationDisputesTable, ReputationEventsTable } from '../../infra/db/tables/trust';
import type { Mismatch, ReplayEntry, Replayer, SnapshotDb } from '../trust/parity';
import { diffKeyed } from '../trust/parity';
import { halfLifeFactor } from './model';
import { aggregateKey, bucketKey, ReputationReplay } from './projection';
import type { ReputationStore } from './store';

const str = (v: unknown): string => String(v);
const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

const eventShape = (r: ReputationEventsTable) => ({
  log_index: r.log_index, subject_agent_id: r.subject_agent_id, epoch: r.epoch, rater_agent_id: r.rater_agent_id, ref_type: r.ref_type,
  ref_id: r.ref_id, outcome: r.outcome, category: r.category, rater_weight: r.rater_weight, created_at: r.created_at, suppressed_at: r.suppressed_at,
});
const bucketShape = (r: ReputationDayBucketsTable) => ({
  approved_w: r.approved_w, approved_wt: r.approved_wt, error_w: r.error_w, error_wt: r.error_wt, rejected_w: r.rejected_w, rejected_wt: r.rejected_wt, n: r.n,
});
const disputeShape = (r: ReputationDisputesTable) => ({
  event_id: r.event_id, agent_id: r.agent_id, status: r.status, filed_at: r.filed_at, filed_day: r.filed_day, filed_log_index: r.filed_log_index,
  decided_at: r.decided_at, decided_log_index: r.decided_log_index,
});

export function reputationReplayer(store: ReputationStore): () => Replayer {
  return () => {
    const replay = new ReputationReplay();
    /** Hashes the log keeps of private text (notes, reasons), to compare with the stored text. */
    const noteHash = new Map<string, string | null>();
    const reasonHash = new Map<string, string>();
    return {
      feed(e: ReplayEntry) {
        const d = e.data;
        if (e.kind === 'reputation.interaction' && e.agent_id && e.epoch !== null) {
          replay.interaction({
            event_id: str(d.event_id), log_index: e.index, subject_agent_id: e.agent_id, epoch: e.epoch, rater_agent_id: str(d.rater_agent_id),
            ref_type: str(d.ref_type), ref_id: str(d.ref_id), outcome: str(d.outcome), category: str(d.category), note: null,
            rater_weight: Number(d.rater_weight), created_at: e.at, suppressed_at: null,
          });
          noteHash.set(str(d.event_id), strOrNull(d.note_sha256));
        } else if (e.kind === 'reputation.dispute.filed' && e.agent_id) {
          replay.disputeFiled({
            dispute_id: str(d.dispute_id), event_id: str(d.event_id), agent_id: e.agent_id, reason: '', status: 'open', filed_at: e.at,
            filed_day: str(d.filed_day), filed_log_index: e.index, decided_at: null, decision_note: null, decided_log_index: null,
          });
          reasonHash.set(str(d.dispute_id), str(d.reason_sha256));
        } else if (e.kind === 'reputation.dispute.decided') {
          replay.disputeDecided(str(d.dispute_id), d.decision === 'upheld' ? 'upheld' : 'dismissed', null, e.at, e.index);
        }
      },

      async diff(now: number, db: SnapshotDb): Promise<Mismatch[]> {
        const stored = await store.all(db);
        const out: Mismatch[] = diffKeyed('reputation_events', replay.events, stored.events, (r) => r.event_id, eventShape, ['rater_weight']);
        for (const s of stored.events) {
          const expected = noteHash.get(s.event_id);
          if (expected !== undefined && expected !== (s.note === null ? null : sha256hex(s.note))) {
            out.push({ projection: 'reputation_events', key: s.event_id, field: 'note', expected: expected, stored: 'text with another SHA-256' });
          }
        }

        // Decayed sums are compared as of now (the live rows and the replay keep different reference times).
        const decayed = (r: ReputationAggregatesTable) => {
          const f = halfLifeFactor(Number(r.ref_at), now);
          return { alpha_now: r.alpha_sum * f, beta_now: r.beta_sum * f, event_count: r.event_count, signal_count: r.signal_count, last_event_at: r.last_event_at };
        };
        out.push(...diffKeyed('reputation_aggregates', replay.aggregates, stored.aggregates, (r) => aggregateKey(r.agent_id, r.epoch, r.category), decayed, ['alpha_now', 'beta_now']));
        out.push(...diffKeyed('reputation_day_buckets', replay.buckets, stored.buckets, (r) => bucketKey(r.agent_id, r.epoch, r.category, Number(r.day_start)), bucketShape,
          ['approved_w', 'approved_wt', 'error_w', 'error_wt', 'rejected_w', 'rejected_wt']));
        out.push(...diffKeyed('reputation_disputes', replay.disputes, stored.disputes, (r) => r.dispute_id, disputeShape));
        for (const s of stored.disputes) {
          const expected = reasonHash.get(s.dispute_id);
          if (expected !== undefined && expected !== sha256hex(s.reason)) {
            out.push({ projection: 'reputation_disputes', key: s.dispute_id, field: 'reason', expected, stored: 'text with another SHA-256' });
          }
        }
        return out;
      },

      agents: () => new Set([...replay.aggregates.values()].map((a) => a.agent_id)),
    };
  };
}

