/** SQL of reputation: rated events, decayed aggregates, day buckets and disputes (projections of the trust log). */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { Engine } from '../../infra/db/dialect';
import { scopeOf, type ScopeSlot } from '../../infra/db/trx-scope';
import type { ReputationAggregatesTable, ReputationDayBucketsTable, ReputationDisputesTable, ReputationEventsTable } from '../../infra/db/tables/trust';
import { dayStart } from './model';
import { ALL, nextAggregate, nextBucket, type RatedEvent } from './projection';

type Db = Kysely<Database> | Transaction<Database>;

/** A projection row as a write batch's scope holds it: its newest value (none: no row yet) and whether the table has it. */
interface HeldRow<T> { value: T | undefined; stored: boolean }

/** What one transaction scope holds of the projections: rows by key, and ratings counted per rater and day. */
interface HeldProjections {
  aggregates: Map<string, HeldRow<ReputationAggregatesTable>>;
  buckets: Map<string, HeldRow<ReputationDayBucketsTable>>;
  ratings: Map<string, number>;
}

export function createReputationStore(db: Kysely<Database>, engine: Engine) {
  async function loadAggregates(trx: Transaction<Database>, ev: RatedEvent, categories: string[]) {
    let q = trx.selectFrom('reputation_aggregates').selectAll()
      .where('agent_id', '=', ev.subject).where('epoch', '=', ev.epoch).where('category', 'in', categories);
    if (engine === 'postgres') q = q.forUpdate();
    return q.execute();
  }

  async function loadBucket(trx: Transaction<Database>, ev: RatedEvent, day: number) {
    let q = trx.selectFrom('reputation_day_buckets').selectAll()
      .where('agent_id', '=', ev.subject).where('epoch', '=', ev.epoch).where('category', '=', ev.category).where('day_start', '=', day);
    if (engine === 'postgres') q = q.forUpdate();
    return q.executeTakeFirst();
  }

  async function saveAggregate(trx: Transaction<Database>, row: HeldRow<ReputationAggregatesTable>): Promise<void> {
    const r = row.value;
    if (!r) return;
    if (!row.stored) {
      await trx.insertInto('reputation_aggregates').values(r).execute();
      return;
    }
    await trx.updateTable('reputation_aggregates')
      .set({ alpha_sum: r.alpha_sum, beta_sum: r.beta_sum, ref_at: r.ref_at, event_count: r.event_count, signal_count: r.signal_count, last_event_at: r.last_event_at })
      .where('agent_id', '=', r.agent_id).where('epoch', '=', r.epoch).where('category', '=', r.category).execute();
  }

  async function saveBucket(trx: Transaction<Database>, row: HeldRow<ReputationDayBucketsTable>): Promise<void> {
    const b = row.value;
    if (!b) return;
    if (!row.stored) {
      await trx.insertInto('reputation_day_buckets').values(b).execute();
      return;
    }
    await trx.updateTable('reputation_day_buckets')
      .set({ approved_w: b.approved_w, approved_wt: b.approved_wt, error_w: b.error_w, error_wt: b.error_wt, rejected_w: b.rejected_w, rejected_wt: b.rejected_wt, n: b.n })
      .where('agent_id', '=', b.agent_id).where('epoch', '=', b.epoch).where('category', '=', b.category).where('day_start', '=', b.day_start).execute();
  }

  /**
   * In a write batch (infra/db/trx-scope.ts) the aggregates and buckets an event moves are read once
   * and written once, when the scope ends: ratings of one subject arriving together cost one update.
   */
  const heldSlot: ScopeSlot<HeldProjections> = {
    async end(trx, held) {
      for (const row of held.aggregates.values()) await saveAggregate(trx, row);
      for (const row of held.buckets.values()) await saveBucket(trx, row);
    },
    discard: () => {},
  };
  const heldOf = (trx: Transaction<Database>): HeldProjections | undefined => {
    const scope = scopeOf(trx);
    if (!scope) return undefined;
    let held = scope.get(heldSlot);
    if (!held) scope.set(heldSlot, (held = { aggregates: new Map(), buckets: new Map(), ratings: new Map() }));
    return held;
  };

  /**
   * Adds (1) or takes back (-1) an event in the aggregates ('all' and its category) and its day
   * bucket; gives the subject's 'all' aggregate after it.
   */
  async function project(trx: Transaction<Database>, ev: RatedEvent, sign: 1 | -1): Promise<ReputationAggregatesTable> {
    const held = heldOf(trx) ?? { aggregates: new Map(), buckets: new Map(), ratings: new Map() };
    const categories = [ALL, ev.category];
    const aggKey = (c: string) => `${ev.subject}|${ev.epoch}|${c}`;
    const unread = categories.filter((c) => !held.aggregates.has(aggKey(c)));
    if (unread.length) {
      const rows = await loadAggregates(trx, ev, unread);
      for (const c of unread) {
        const row = rows.find((r) => r.category === c);
        held.aggregates.set(aggKey(c), { value: row, stored: row !== undefined });
      }
    }
    for (const c of categories) {
      const row = held.aggregates.get(aggKey(c)) as HeldRow<ReputationAggregatesTable>;
      row.value = nextAggregate(row.value, c, ev, sign);
    }
    const day = dayStart(ev.at);
    const bucketKey = `${ev.subject}|${ev.epoch}|${ev.category}|${day}`;
    let bucket = held.buckets.get(bucketKey);
    if (!bucket) {
      const row = await loadBucket(trx, ev, day);
      held.buckets.set(bucketKey, (bucket = { value: row, stored: row !== undefined }));
    }
    bucket.value = nextBucket(bucket.value, ev, sign);
    if (!scopeOf(trx)) await heldSlot.end(trx, held);
    return held.aggregates.get(aggKey(ALL))?.value as ReputationAggregatesTable;
  }

  return {
    project,

    findRating(rater: string, subject: string, refType: string, refId: string, trx: Db = db) {
      return trx.selectFrom('reputation_events').selectAll()
        .where('rater_agent_id', '=', rater).where('subject_agent_id', '=', subject).where('ref_type', '=', refType).where('ref_id', '=', refId)
        .executeTakeFirst();
    },

    /** Leaf hash (hex) of the log entry at `index`: a repeated rating answers the first one's. */
    async leafHash(index: number): Promise<string | undefined> {
      const row = await db.selectFrom('trust_log_entries').select('leaf_hash').where('log_index', '=', index).executeTakeFirst();
      return row?.leaf_hash;
    },

    async insertEvent(trx: Transaction<Database>, row: ReputationEventsTable): Promise<void> {
      await trx.insertInto('reputation_events').values(row).execute();
    },

    event(eventId: string, trx: Db = db) {
      return trx.selectFrom('reputation_events').selectAll().where('event_id', '=', eventId).executeTakeFirst();
    },

    /**
     * Ratings `rater` gave since `since`, counted up to `cap` (enough to know whether the cap is
     * reached). In a write batch the count is read once per rater and day and kept up to date with
     * `countRating`.
     */
    async ratingsSince(rater: string, since: number, cap: number, trx: Transaction<Database>): Promise<number> {
      const held = heldOf(trx);
      const key = `${rater}|${since}`;
      const known = held?.ratings.get(key);
      if (known !== undefined) return known;
      const row = await trx.selectFrom((eb) => eb.selectFrom('reputation_events').select('event_id')
        .where('rater_agent_id', '=', rater).where('created_at', '>=', since).limit(cap).as('counted'))
        .select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
      const n = Number(row?.n ?? 0);
      held?.ratings.set(key, n);
      return n;
    },

    /** A rating was written in this transaction: the scope's count of `ratingsSince` follows it. */
    countRating(rater: string, since: number, trx: Transaction<Database>): void {
      const held = heldOf(trx);
      const key = `${rater}|${since}`;
      const known = held?.ratings.get(key);
      if (held && known !== undefined) held.ratings.set(key, known + 1);
    },

    aggregates(agent: string, epoch: number) {
      return db.selectFrom('reputation_aggregates').selectAll().where('agent_id', '=', agent).where('epoch', '=', epoch).execute();
    },

    /** The 'all' aggregates of these agents, every epoch (the caller keeps the one it wants; agents have few). */
    aggregatesOf(pairs: { agentId: string; epoch: number }[], trx: Db = db) {
      return trx.selectFrom('reputation_aggregates').selectAll()
        .where('agent_id', 'in', pairs.map((p) => p.agentId)).where('category', '=', ALL).execute();
    },

    /** Day buckets of these agents from the day holding `from` on, every epoch (the caller keeps the one it wants). */
    bucketsOf(pairs: { agentId: string; epoch: number }[], from: number) {
      return db.selectFrom('reputation_day_buckets').selectAll()
        .where('agent_id', 'in', pairs.map((p) => p.agentId)).where('day_start', '>=', dayStart(from)).execute();
    },

    /** Counted events of many (agent, epoch) pairs in (from, to). */
    edgeEventsOf(pairs: { agentId: string; epoch: number }[], from: number, to: number) {
      return db.selectFrom('reputation_events').select(['subject_agent_id', 'epoch', 'category', 'outcome', 'rater_weight', 'created_at'])
        .where((eb) => eb.or(pairs.map((p) => eb.and([
          eb('subject_agent_id', '=', p.agentId), eb('epoch', '=', p.epoch), eb('created_at', '>', from), eb('created_at', '<', to),
        ]))))
        .where('suppressed_at', 'is', null).execute();
    },

    /** Day buckets from the day holding `from` on. */
    buckets(agent: string, epoch: number, from: number) {
      return db.selectFrom('reputation_day_buckets').selectAll()
        .where('agent_id', '=', agent).where('epoch', '=', epoch).where('day_start', '>=', dayStart(from)).execute();
    },

    /** Counted events in (from, to): the part of the window's first day that is still inside it. */
    edgeEvents(agent: string, epoch: number, from: number, to: number) {
      return db.selectFrom('reputation_events').select(['category', 'outcome', 'rater_weight', 'created_at'])
        .where('subject_agent_id', '=', agent).where('epoch', '=', epoch)
        .where('created_at', '>', from).where('created_at', '<', to).where('suppressed_at', 'is', null).execute();
    },

    /** Events of an epoch, newest first, after the keyset (created_at, event_id). */
    eventsPage(agent: string, epoch: number, limit: number, after?: { at: number; id: string }) {
      let q = db.selectFrom('reputation_events').selectAll().where('subject_agent_id', '=', agent).where('epoch', '=', epoch);
      if (after) q = q.where((eb) => eb.or([eb('created_at', '<', after.at), eb.and([eb('created_at', '=', after.at), eb('event_id', '<', after.id)])]));
      return q.orderBy('created_at', 'desc').orderBy('event_id', 'desc').limit(limit).execute();
    },

    async suppress(trx: Transaction<Database>, eventId: string, at: number): Promise<void> {
      await trx.updateTable('reputation_events').set({ suppressed_at: at }).where('event_id', '=', eventId).where('suppressed_at', 'is', null).execute();
    },

    async disputesOn(agent: string, day: string, trx: Db = db): Promise<number> {
      const row = await trx.selectFrom('reputation_disputes').select((eb) => eb.fn.countAll<number>().as('n'))
        .where('agent_id', '=', agent).where('filed_day', '=', day).executeTakeFirst();
      return Number(row?.n ?? 0);
    },

    disputeOfEvent(eventId: string, trx: Db = db) {
      return trx.selectFrom('reputation_disputes').selectAll().where('event_id', '=', eventId).executeTakeFirst();
    },

    async dispute(disputeId: string, trx: Db = db, lock = false) {
      let q = trx.selectFrom('reputation_disputes').selectAll().where('dispute_id', '=', disputeId);
      if (lock && engine === 'postgres') q = q.forUpdate();
      return q.executeTakeFirst();
    },

    async insertDispute(trx: Transaction<Database>, row: ReputationDisputesTable): Promise<void> {
      await trx.insertInto('reputation_disputes').values(row).execute();
    },

    async decide(trx: Transaction<Database>, disputeId: string, set: { status: string; decided_at: number; decision_note: string | null; decided_log_index: number }): Promise<boolean> {
      const r = await trx.updateTable('reputation_disputes').set(set).where('dispute_id', '=', disputeId).where('status', '=', 'open').executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },

    /** Log indexes of an epoch's events (newest first, at most `limit`) and of decisions on them. */
    async traceIndexes(agent: string, epoch: number, limit: number) {
      const [events, decided] = await Promise.all([
        db.selectFrom('reputation_events').select(['log_index', 'suppressed_at']).where('subject_agent_id', '=', agent).where('epoch', '=', epoch)
          .orderBy('log_index', 'desc').limit(limit).execute(),
        db.selectFrom('reputation_disputes as d').innerJoin('reputation_events as e', 'e.event_id', 'd.event_id')
          .select(['d.decided_log_index', 'd.status']).where('e.subject_agent_id', '=', agent).where('e.epoch', '=', epoch)
          .where('d.decided_log_index', 'is not', null).execute(),
      ]);
      return {
        events: events.map((e) => Number(e.log_index)),
        suppressed: events.filter((e) => e.suppressed_at !== null).map((e) => Number(e.log_index)),
        upheld: decided.filter((d) => d.status === 'upheld').map((d) => Number(d.decided_log_index)),
        dismissed: decided.filter((d) => d.status === 'dismissed').map((d) => Number(d.decided_log_index)),
      };
    },

    /** Every stored projection row (parity check). */
    async all(snap: Db = db) {
      // One after another: a snapshot transaction runs one statement at a time.
      const events = await snap.selectFrom('reputation_events').selectAll().execute();
      const aggregates = await snap.selectFrom('reputation_aggregates').selectAll().execute();
      const buckets = await snap.selectFrom('reputation_day_buckets').selectAll().execute();
      const disputes = await snap.selectFrom('reputation_disputes').selectAll().execute();
      return { events, aggregates, buckets, disputes };
    },

    /** Counts for the adoption report (`since`: start of its window). */
    async counts(since: number) {
      const row = await db.selectFrom('reputation_events').select([
        (eb) => eb.fn.countAll<number>().as('events'),
        sql<number>`sum(case when created_at >= ${since} then 1 else 0 end)`.as('recent'),
        sql<number>`count(distinct subject_agent_id)`.as('subjects'),
        sql<number>`count(distinct rater_agent_id)`.as('raters'),
      ]).executeTakeFirst();
      const disputes = await db.selectFrom('reputation_disputes').select(['status', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('status').execute();
      return {
        events: Number(row?.events ?? 0), events_in_window: Number(row?.recent ?? 0), subjects: Number(row?.subjects ?? 0), raters: Number(row?.raters ?? 0),
        disputes: Object.fromEntries(disputes.map((d) => [d.status, Number(d.n)])),
      };
    },
  };
}

export type ReputationStore = ReturnType<typeof createReputationStore>;
