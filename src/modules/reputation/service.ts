/**
 * Reputation: interaction ratings (one trust log entry each), the Beta score read from decayed
 * projections, the public history per custody epoch, and disputes decided by an admin (a
 * counter-entry; nothing is deleted).
 */
import type { Kysely, Transaction } from 'kysely';
import { ApiError } from '../../http/errors';
import { isUniqueViolation } from '../../infra/db/dialect';
import type { Database } from '../../infra/db/schema';
import type { ReputationEventsTable } from '../../infra/db/tables/trust';
import { iso, type Clock } from '../../lib/clock';
import { sha256hex } from '../../lib/hash';
import { newId } from '../../lib/ids';
import { DAY_MS, utcDay } from '../../lib/utc';
import type { Epochs } from '../trust/epochs';
import type { TrustLog } from '../trust/log';
import {
  CATEGORIES, halfLifeFactor, linearBeta, MIN_INTERACTIONS, raterWeight, reputationObject, scoreAt, subSignal, subSignalPoint, SUB_SIGNAL_DECAY_MS,
  type Category, type DayBucket, type Outcome,
} from './model';
import { ALL, ratedEvent } from './projection';
import type { ReputationStore } from './store';

/** What reputation needs to know of an agent (from identity). */
export interface AgentProfile {
  agentId: string;
  owner: string;
  active: boolean;
  passportActive: boolean;
  trustLevels: string[];
  subSignalVisibility: string;
}

export interface ReputationDeps {
  db: Kysely<Database>;
  store: ReputationStore;
  log: TrustLog;
  epochs: Epochs;
  clock: Clock;
  /** `levels: false`: trustLevels may be left empty (the caller needs only existence and status). */
  profile: (agentId: string, opts?: { levels?: boolean }) => Promise<AgentProfile | undefined>;
  /** Ratings one rater may give per UTC day. */
  ratingsPerDay: number;
  /** Disputes one agent may file per UTC day. */
  disputesPerDay: number;
}

export interface InteractionInput {
  subject_agent_id: string; ref_type: string; ref_id: string; outcome: Outcome; category: Category; note?: string | null;
}

/** An agent's score, status and (decomposed visibility) point sub-signals: a directory row's figures. */
export interface Standing { score: number; status: string; sub_signals?: Record<Category, ReturnType<typeof subSignalPoint>> }

/** Told of an agent's new score in the transaction of the rating or decision that changed it (the directory's rank). */
export type ScoreListener = (trx: Transaction<Database>, agentId: string, score: number, at: number) => Promise<void>;

const sumsOf = (a: { alpha_sum: number; beta_sum: number; ref_at: number } | undefined, at: number) =>
  (a ? { alpha_sum: a.alpha_sum, beta_sum: a.beta_sum, ref_at: Number(a.ref_at) } : { alpha_sum: 0, beta_sum: 0, ref_at: at });

/** A rating found already given inside the rating's transaction (answered once that transaction has ended). */
class AlreadyRated extends Error {}

const nextUtcDay = (now: number) => Math.floor(now / DAY_MS) * DAY_MS + DAY_MS;
const hashOrNull = (s: string | null) => (s === null ? null : sha256hex(s));

export function createReputationService(deps: ReputationDeps) {
  const { db, store, log, epochs, clock } = deps;
  let scoreListener: ScoreListener | undefined;

  function eventView(e: ReputationEventsTable, now: number) {
    const suppressed = e.suppressed_at !== null;
    return {
      event_id: e.event_id,
      log_index: Number(e.log_index),
      rater_agent_id: e.rater_agent_id,
      ref_type: e.ref_type,
      ref_id: e.ref_id,
      outcome: e.outcome,
      category: e.category,
      rater_weight: e.rater_weight,
      weight_now: suppressed ? 0 : Number((e.rater_weight * halfLifeFactor(Number(e.created_at), now)).toFixed(6)),
      suppressed,
      created_at: iso(Number(e.created_at)),
    };
  }

  function rateView(e: ReputationEventsTable, leafHash?: string) {
    return {
      event_id: e.event_id, log_index: Number(e.log_index), ...(leafHash ? { leaf_hash: Buffer.from(leafHash, 'hex').toString('base64') } : {}),
      subject_agent_id: e.subject_agent_id, epoch: e.epoch, outcome: e.outcome, category: e.category, rater_weight: e.rater_weight,
      created_at: iso(Number(e.created_at)),
    };
  }

  /** The reputation object and sub-signals of an epoch, as of `at`. */
  async function standing(agentId: string, epoch: number, at: number, withSubSignals: boolean) {
    const from = at - SUB_SIGNAL_DECAY_MS;
    const [aggs, buckets, edge] = await Promise.all([
      store.aggregates(agentId, epoch),
      withSubSignals ? store.buckets(agentId, epoch, from) : Promise.resolve([]),
      withSubSignals ? store.edgeEvents(agentId, epoch, from, Math.floor(from / DAY_MS) * DAY_MS + DAY_MS) : Promise.resolve([]),
    ]);
    const all = aggs.find((a) => a.category === ALL);
    const reputation = reputationObject(
      all ? { alpha_sum: all.alpha_sum, beta_sum: all.beta_sum, ref_at: Number(all.ref_at) } : { alpha_sum: 0, beta_sum: 0, ref_at: at },
      { event_count: all?.event_count ?? 0, signal_count: all?.signal_count ?? 0, last_event_at: all?.last_event_at == null ? null : Number(all.last_event_at) },
      at,
    );
    if (!withSubSignals) return { reputation };
    const subs = Object.fromEntries(CATEGORIES.map((c) => {
      const days = buckets.filter((b) => b.category === c).map((b) => ({ ...b, day_start: Number(b.day_start) }) as DayBucket);
      const edgeEv = edge.filter((e) => e.category === c).map((e) => ({ outcome: e.outcome as Outcome, weight: e.rater_weight, at: Number(e.created_at) }));
      return [c, subSignal(linearBeta(days, edgeEv, at))];
    })) as Record<Category, ReturnType<typeof subSignal>>;
    return { reputation, reputation_sub_signals: subs };
  }

  return {
    standing,

    /** The directory keeps its rank up to date from here (it is built after reputation). */
    onScoreChange(listener: ScoreListener) {
      scoreListener = listener;
    },

    /** Scores at `at` of many agents in the given epochs (an agent with no rated event has the prior 0.5). */
    async scoresOf(pairs: { agentId: string; epoch: number }[], at: number, trx?: Transaction<Database>): Promise<Map<string, number>> {
      const out = new Map<string, number>();
      for (let i = 0; i < pairs.length; i += 200) {
        const chunk = pairs.slice(i, i + 200);
        const rows = await store.aggregatesOf(chunk, trx);
        for (const p of chunk) out.set(p.agentId, scoreAt(sumsOf(rows.find((r) => r.agent_id === p.agentId && r.epoch === p.epoch), at), at));
      }
      return out;
    },

    /**
     * Score, status and (for `decomposed` agents) sub-signals of many agents at `at`, in a few reads
     * whatever their number: a directory page. The same figures as `standing`.
     */
    async standingsOf(items: { agentId: string; epoch: number; decomposed: boolean }[], at: number) {
      const out = new Map<string, Standing>();
      if (items.length === 0) return out;
      const from = at - SUB_SIGNAL_DECAY_MS;
      const subs = items.filter((x) => x.decomposed);
      const edgeDay = Math.floor(from / DAY_MS) * DAY_MS;
      const [aggs, buckets] = await Promise.all([store.aggregatesOf(items), subs.length ? store.bucketsOf(subs, from) : Promise.resolve([])]);
      // The events of the window's first day are read only for agents that have a bucket that day (most have none).
      const edgeOf = subs.filter((x) => buckets.some((b) => b.agent_id === x.agentId && b.epoch === x.epoch && Number(b.day_start) === edgeDay));
      const edge = edgeOf.length ? await store.edgeEventsOf(edgeOf, from, edgeDay + DAY_MS) : [];
      for (const x of items) {
        const all = aggs.find((a) => a.agent_id === x.agentId && a.epoch === x.epoch);
        const entry: Standing = {
          score: scoreAt(sumsOf(all, at), at), status: (all?.signal_count ?? 0) >= MIN_INTERACTIONS ? 'scored' : 'insufficient_data',
        };
        if (x.decomposed) {
          entry.sub_signals = Object.fromEntries(CATEGORIES.map((c) => {
            const days = buckets.filter((b) => b.agent_id === x.agentId && b.epoch === x.epoch && b.category === c)
              .map((b) => ({ ...b, day_start: Number(b.day_start) }) as DayBucket);
            const edgeEv = edge.filter((e) => e.subject_agent_id === x.agentId && e.epoch === x.epoch && e.category === c)
              .map((e) => ({ outcome: e.outcome as Outcome, weight: e.rater_weight, at: Number(e.created_at) }));
            return [c, subSignalPoint(linearBeta(days, edgeEv, at))];
          })) as Standing['sub_signals'];
        }
        out.set(x.agentId, entry);
      }
      return out;
    },

    /** What a passport, agent card or directory row shows: the current epoch's figures now. */
    async current(agentId: string, decomposed: boolean) {
      const epoch = await epochs.current(agentId);
      return standing(agentId, epoch, clock.now(), decomposed);
    },

    async rate(raterId: string, input: InteractionInput) {
      const subject = input.subject_agent_id.toLowerCase();
      // The rater's levels weigh its rating; of the subject only its existence and status matter.
      const [rater, target] = await Promise.all([deps.profile(raterId), deps.profile(subject, { levels: false })]);
      if (!target) throw new ApiError(404, 'SUBJECT_NOT_FOUND', 'No agent with this subject_agent_id');
      if (!rater || !rater.active || !rater.passportActive) {
        throw new ApiError(404, 'RATER_NOT_FOUND', 'The rating agent has no active passport; only an active agent can rate');
      }
      const ineligible = (reason: string, message: string) => new ApiError(403, 'REPUTATION_SUBJECT_INELIGIBLE', message, { reason });
      if (subject === raterId) throw ineligible('self', 'An agent cannot rate itself');
      if (target.owner === rater.owner) throw ineligible('same_owner', 'An agent cannot rate an agent of the same owner');
      if (!target.active || !target.passportActive) throw ineligible('subject_inactive', 'The subject is suspended or its passport is revoked');

      const existing = await store.findRating(raterId, subject, input.ref_type, input.ref_id);
      if (existing) return { created: false, event: rateView(existing, await store.leafHash(Number(existing.log_index))) };
      const now = clock.now();
      const weight = raterWeight(rater.trustLevels);
      const note = input.note ?? null;
      try {
        return await log.write(async (trx) => {
          // Under the log's append lock, so the day's cap holds with several instances.
          await log.lockHeadFor(trx);
          // The same rating sent twice at once: the second is a repeat, not a rating over the cap.
          if (await store.findRating(raterId, subject, input.ref_type, input.ref_id, trx)) throw new AlreadyRated();
          const dayStartMs = Math.floor(now / DAY_MS) * DAY_MS;
          if (await store.ratingsSince(raterId, dayStartMs, deps.ratingsPerDay, trx) >= deps.ratingsPerDay) {
            const retry = Math.ceil((nextUtcDay(now) - now) / 1000);
            throw new ApiError(429, 'INTERACTION_RATE_LIMITED', `At most ${deps.ratingsPerDay} interaction ratings per rater per UTC day`,
              { limit: deps.ratingsPerDay, resets_at: iso(nextUtcDay(now)) }, { 'retry-after': String(retry) });
          }
          const epoch = await epochs.current(subject, trx);
          const row: ReputationEventsTable = {
            event_id: newId(), log_index: 0, subject_agent_id: subject, epoch, rater_agent_id: raterId, ref_type: input.ref_type,
            ref_id: input.ref_id, outcome: input.outcome, category: input.category, note, rater_weight: weight, created_at: now, suppressed_at: null,
          };
          const appended = await log.append(trx, {
            kind: 'reputation.interaction', agentId: subject, epoch, at: now,
            data: {
              event_id: row.event_id, rater_agent_id: raterId, ref_type: row.ref_type, ref_id: row.ref_id, outcome: row.outcome,
              category: row.category, rater_weight: weight, note_sha256: hashOrNull(note),
            },
          });
          row.log_index = appended.index;
          await store.insertEvent(trx, row);
          store.countRating(raterId, dayStartMs, trx);
          const all = await store.project(trx, ratedEvent(row), 1);
          if (scoreListener) await scoreListener(trx, subject, scoreAt(sumsOf(all, now), now), now);
          return { created: true, event: rateView(row, appended.leafHash) };
        }, subject);
      } catch (e) {
        // The same rating from two requests at once: the first stands and the second answers it.
        if (!(e instanceof AlreadyRated) && !isUniqueViolation(e)) throw e;
        const first = await store.findRating(raterId, subject, input.ref_type, input.ref_id);
        if (!first) throw e;
        return { created: false, event: rateView(first, await store.leafHash(Number(first.log_index))) };
      }
    },

    async history(agentId: string, q: { epoch?: number; include_events?: boolean; cursor?: string; limit: number }) {
      const profile = await deps.profile(agentId);
      if (!profile) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this id');
      const list = await epochs.list(profile.agentId);
      const open = list.find((e) => e.closed_at === null) ?? list[list.length - 1];
      const chosen = q.epoch === undefined ? open : list.find((e) => e.epoch === q.epoch);
      if (!chosen) throw new ApiError(404, 'EPOCH_NOT_FOUND', `Agent has no epoch ${q.epoch}`, { epochs: list.map((e) => e.epoch) });
      const now = clock.now();
      const at = chosen.closed_at === null ? now : Number(chosen.closed_at);
      const summary = await standing(profile.agentId, chosen.epoch, at, profile.subSignalVisibility === 'decomposed');
      const out = {
        agent_id: profile.agentId,
        epoch: chosen.epoch,
        current_epoch: open?.epoch ?? 1,
        as_of: iso(at),
        epochs: list.map((e) => epochs.view(e)),
        ...summary,
      };
      if (!q.include_events) return out;
      const after = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
      const rows = await store.eventsPage(profile.agentId, chosen.epoch, q.limit + 1, after);
      const page = rows.slice(0, q.limit);
      const last = page[page.length - 1];
      return {
        ...out,
        events: page.map((e) => eventView(e, at)),
        next_cursor: rows.length > q.limit && last ? encodeCursor(Number(last.created_at), last.event_id) : null,
      };
    },

    async dispute(agentId: string, input: { event_id: string; reason: string }) {
      const event = await store.event(input.event_id.toLowerCase());
      if (!event) throw new ApiError(404, 'REPUTATION_EVENT_NOT_FOUND', 'No reputation event with this event_id');
      if (event.subject_agent_id !== agentId) {
        throw new ApiError(403, 'DISPUTE_NOT_SUBJECT', 'Only the subject of a reputation event can dispute it');
      }
      const now = clock.now();
      const day = utcDay(now);
      return db.transaction().execute(async (trx) => {
        // Under the log's append lock: the day's count and the one-dispute-per-event rule hold across instances.
        await log.lockHeadFor(trx);
        if (await store.disputeOfEvent(event.event_id, trx)) {
          throw new ApiError(409, 'DISPUTE_ALREADY_FILED', 'This event has already been disputed; a dispute is decided once');
        }
        if (await store.disputesOn(agentId, day, trx) >= deps.disputesPerDay) {
          throw new ApiError(429, 'DISPUTE_RATE_LIMITED', `At most ${deps.disputesPerDay} disputes per agent per UTC day`,
            { limit: deps.disputesPerDay, resets_at: iso(nextUtcDay(now)) }, { 'retry-after': String(Math.ceil((nextUtcDay(now) - now) / 1000)) });
        }
        const disputeId = newId();
        const appended = await log.append(trx, {
          kind: 'reputation.dispute.filed', agentId, epoch: event.epoch, at: now,
          data: { dispute_id: disputeId, event_id: event.event_id, event_log_index: Number(event.log_index), reason_sha256: sha256hex(input.reason), filed_day: day },
        });
        await store.insertDispute(trx, {
          dispute_id: disputeId, event_id: event.event_id, agent_id: agentId, reason: input.reason, status: 'open',
          filed_at: now, filed_day: day, filed_log_index: appended.index, decided_at: null, decision_note: null, decided_log_index: null,
        });
        return { dispute_id: disputeId, event_id: event.event_id, dispute_status: 'open', filed_at: iso(now), log_index: appended.index };
      });
    },

    async decide(disputeId: string, input: { decision: 'upheld' | 'dismissed'; note?: string | null }) {
      const now = clock.now();
      const note = input.note ?? null;
      return db.transaction().execute(async (trx) => {
        await log.lockHeadFor(trx);
        const d = await store.dispute(disputeId.toLowerCase(), trx, true);
        if (!d) throw new ApiError(404, 'DISPUTE_NOT_FOUND', 'No dispute with this id');
        if (d.status !== 'open') {
          throw new ApiError(409, 'DISPUTE_ALREADY_DECIDED', `This dispute was already decided (${d.status})`, { status: d.status });
        }
        const event = await store.event(d.event_id, trx);
        const appended = await log.append(trx, {
          kind: 'reputation.dispute.decided', agentId: d.agent_id, epoch: event?.epoch ?? null, at: now,
          data: { dispute_id: d.dispute_id, event_id: d.event_id, decision: input.decision, note_sha256: hashOrNull(note) },
        });
        await store.decide(trx, d.dispute_id, { status: input.decision, decided_at: now, decision_note: note, decided_log_index: appended.index });
        if (input.decision === 'upheld' && event && event.suppressed_at === null) {
          await store.suppress(trx, event.event_id, now);
          const all = await store.project(trx, ratedEvent(event), -1);
          // A prior epoch's event changes no current score.
          if (scoreListener && event.epoch === await epochs.current(event.subject_agent_id, trx)) {
            await scoreListener(trx, event.subject_agent_id, scoreAt(sumsOf(all, now), now), now);
          }
        }
        return {
          dispute_id: d.dispute_id, event_id: d.event_id, dispute_status: input.decision, decided_at: iso(now), log_index: appended.index,
          event_weight: input.decision === 'upheld' ? 0 : event?.rater_weight ?? null,
        };
      });
    },

  };
}

function encodeCursor(at: number, id: string): string {
  return Buffer.from(JSON.stringify([at, id])).toString('base64url');
}

function decodeCursor(cursor: string): { at: number; id: string } {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === 'string') return { at: v[0] as number, id: v[1] as string };
  } catch { /* falls through */ }
  throw new ApiError(422, 'INVALID_CURSOR', 'cursor is not a next_cursor this route handed out');
}

export type ReputationService = ReturnType<typeof createReputationService>;
