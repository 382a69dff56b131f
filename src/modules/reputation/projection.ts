/**
 * How reputation facts of the trust log change the reputation projections. The same functions
 * update the stored rows (store.ts, inside the append's transaction) and rebuild the projections
 * from the log in memory (parity check), so the two cannot drift apart.
 */
import type { ReputationAggregatesTable, ReputationDayBucketsTable, ReputationDisputesTable, ReputationEventsTable } from '../../infra/db/tables/trust';
import { dayStart, withEvent, type Category, type Outcome } from './model';

export const ALL = 'all';

/** What the projections need of one rated interaction. */
export interface RatedEvent { subject: string; epoch: number; outcome: Outcome; category: Category; weight: number; at: number }

export const aggregateKey = (agent: string, epoch: number, category: string) => `${agent}|${epoch}|${category}`;
export const bucketKey = (agent: string, epoch: number, category: string, day: number) => `${agent}|${epoch}|${category}|${day}`;

/** The aggregate row after adding (sign 1) an event, or taking back (sign -1) a suppressed one. */
export function nextAggregate(row: ReputationAggregatesTable | undefined, category: string, ev: RatedEvent, sign: 1 | -1): ReputationAggregatesTable {
  const base = row ?? { agent_id: ev.subject, epoch: ev.epoch, category, alpha_sum: 0, beta_sum: 0, ref_at: ev.at, event_count: 0, signal_count: 0, last_event_at: null };
  const sums = withEvent({ alpha_sum: base.alpha_sum, beta_sum: base.beta_sum, ref_at: Number(base.ref_at) }, ev.outcome, ev.weight, ev.at, sign);
  return {
    ...base,
    ...sums,
    event_count: base.event_count + (sign === 1 ? 1 : 0),
    signal_count: base.signal_count + sign,
    last_event_at: sign === 1 ? Math.max(ev.at, base.last_event_at === null ? ev.at : Number(base.last_event_at)) : base.last_event_at,
  };
}

/** The day bucket row after adding or taking back an event. */
export function nextBucket(row: ReputationDayBucketsTable | undefined, ev: RatedEvent, sign: 1 | -1): ReputationDayBucketsTable {
  const day = dayStart(ev.at);
  const base = row ?? { agent_id: ev.subject, epoch: ev.epoch, category: ev.category, day_start: day, approved_w: 0, approved_wt: 0, error_w: 0, error_wt: 0, rejected_w: 0, rejected_wt: 0, n: 0 };
  const w = `${ev.outcome}_w` as const;
  const wt = `${ev.outcome}_wt` as const;
  return { ...base, [w]: base[w] + sign * ev.weight, [wt]: base[wt] + sign * ev.weight * (ev.at - day), n: base.n + sign };
}

/** Projections rebuilt in memory from the log (parity check). */
export class ReputationReplay {
  readonly events = new Map<string, ReputationEventsTable>();
  readonly aggregates = new Map<string, ReputationAggregatesTable>();
  readonly buckets = new Map<string, ReputationDayBucketsTable>();
  readonly disputes = new Map<string, ReputationDisputesTable>();

  private apply(ev: RatedEvent, sign: 1 | -1): void {
    for (const category of [ALL, ev.category]) {
      const k = aggregateKey(ev.subject, ev.epoch, category);
      this.aggregates.set(k, nextAggregate(this.aggregates.get(k), category, ev, sign));
    }
    const b = bucketKey(ev.subject, ev.epoch, ev.category, dayStart(ev.at));
    this.buckets.set(b, nextBucket(this.buckets.get(b), ev, sign));
  }

  interaction(row: ReputationEventsTable): void {
    this.events.set(row.event_id, row);
    this.apply(ratedEvent(row), 1);
  }

  disputeFiled(row: ReputationDisputesTable): void {
    this.disputes.set(row.dispute_id, row);
  }

  disputeDecided(disputeId: string, decision: 'upheld' | 'dismissed', note: string | null, at: number, logIndex: number): void {
    const d = this.disputes.get(disputeId);
    if (!d) return;
    this.disputes.set(disputeId, { ...d, status: decision, decided_at: at, decision_note: note, decided_log_index: logIndex });
    const ev = this.events.get(d.event_id);
    if (decision === 'upheld' && ev && ev.suppressed_at === null) {
      this.events.set(ev.event_id, { ...ev, suppressed_at: at });
      this.apply(ratedEvent(ev), -1);
    }
  }
}

export function ratedEvent(row: Pick<ReputationEventsTable, 'subject_agent_id' | 'epoch' | 'outcome' | 'category' | 'rater_weight' | 'created_at'>): RatedEvent {
  return {
    subject: row.subject_agent_id, epoch: row.epoch, outcome: row.outcome as Outcome, category: row.category as Category,
    weight: row.rater_weight, at: Number(row.created_at),
  };
}
