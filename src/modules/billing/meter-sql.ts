/**
 * The charge's hot statements, compiled once (src/infra/db/prepared.ts) and, on SQLite, run straight
 * on the connection inside the caller's transaction. A charge is 6–7 indexed statements: the account
 * lock, the free-slot state, one slot write (free call) or one lot update and one ledger row (paid
 * call), the day counter, and the live lots (balance and earliest expiry, computed here from the
 * same rows the spend draws from). The cold paths (refund, snapshot, grants) stay in meter-store.ts
 * and ledger-store.ts; both write the same tables.
 */
import type SQLite from 'better-sqlite3';
import { sql, type Compilable, type Kysely, type Transaction } from 'kysely';
import { engineOf } from '../../infra/db/dialect';
import { prepared } from '../../infra/db/prepared';
import type { Database } from '../../infra/db/schema';
import { newOrderedId } from '../../lib/ids';
import type { Units } from '../../lib/money';
import { normalizeAccount, type Account } from './store';

export interface Lot { lot_id: string; remaining_units: number; expires_at: number | null }

/** Balance and the earliest expiry of credit still held, from the live lots. */
export function summarize(lots: Lot[]): { units: Units; earliestExpiry: number | null } {
  let units = 0;
  let earliest: number | null = null;
  for (const l of lots) {
    if (l.remaining_units <= 0) continue;
    units += l.remaining_units;
    if (l.expires_at !== null && (earliest === null || l.expires_at < earliest)) earliest = l.expires_at;
  }
  return { units, earliestExpiry: earliest };
}

export function createMeterSql(db: Kysely<Database>, sqlite?: SQLite.Database) {
  const pg = engineOf(db) === 'postgres';
  const S = {
    agent: '\u0000agent', pool: '\u0000pool', day: '\u0000day', from: '\u0000from', lot: '\u0000lot', charge: '\u0000charge',
    entry: '\u0000entry', action: '\u0000action',
    floor: -987_654_321_000_001, now: -987_654_321_000_002, since: -987_654_321_000_003, slot: -987_654_321_000_004,
    delta: -987_654_321_000_005, units: -987_654_321_000_006,
  };
  /** A compiled statement, always run in the caller's transaction; values left out bind as null. */
  const q = <R>(build: (s: typeof S) => Compilable<R>) => {
    const run = prepared<typeof S, R>(db, S, build, sqlite);
    return (values: Parameters<typeof run>[0], trx: Transaction<Database>) => run(values, trx);
  };

  const lockQ = q<Account>((s) => {
    const b = db.selectFrom('billing_accounts').selectAll().where('agent_id', '=', s.agent);
    return pg ? b.forUpdate() : b;
  });
  const ensureQ = q((s) => db.insertInto('billing_accounts').values({
    agent_id: s.agent, lifetime_purchase_units: 0, payment_customer_id: null, payment_method_id: null, recharge_consent_id: null,
    auto_topup_enabled: 0, auto_topup_threshold_units: 0, auto_topup_units: 0, topup_dip_open: 0, topup_intent_id: null,
    created_at: s.now, updated_at: s.now,
  }).onConflict((oc) => oc.column('agent_id').doNothing()));
  // Slots 0..top exist (they are never deleted). The top one: an index seek (a count would walk up to `floor` rows).
  const topSlotQ = q<{ slot: number }>((s) => db.selectFrom('metering_free_slots').select('slot')
    .where('agent_id', '=', s.agent).where('pool', '=', s.pool).where('slot', '<', s.floor)
    .orderBy('slot', 'desc').limit(1));
  // The least recently used slot, from the (agent_id, pool, used_at) index. No slot filter, so that
  // index answers at once: slots are only ever created below the floor (a constant).
  const oldestSlotQ = q<{ slot: number; used_at: number }>((s) => db.selectFrom('metering_free_slots').select(['slot', 'used_at'])
    .where('agent_id', '=', s.agent).where('pool', '=', s.pool)
    .orderBy('used_at').limit(1));
  const insertSlotQ = q((s) => db.insertInto('metering_free_slots').values({ agent_id: s.agent, pool: s.pool, slot: s.slot, used_at: s.now, charge_id: s.charge }));
  const reuseSlotQ = q((s) => db.updateTable('metering_free_slots').set({ used_at: s.now, charge_id: s.charge })
    .where('agent_id', '=', s.agent).where('pool', '=', s.pool).where('slot', '=', s.slot));
  const freeUsedQ = q<{ n: number }>((s) => db.selectFrom('metering_free_slots').select(sql<number>`count(*)`.as('n'))
    .where('agent_id', '=', s.agent).where('pool', '=', s.pool).where('slot', '<', s.floor).where('used_at', '>', s.since));
  const lotsQ = q<Lot>((s) => db.selectFrom('credit_lots').select(['lot_id', 'remaining_units', 'expires_at'])
    .where('agent_id', '=', s.agent).where('remaining_units', '>', 0)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', s.now)]))
    // Soonest expiry first, purchased (never expiring) credit last.
    .orderBy(sql`case when expires_at is null then 1 else 0 end`).orderBy('expires_at').orderBy('created_at'));
  const takeLotQ = q((s) => db.updateTable('credit_lots').set({ remaining_units: sql`remaining_units - ${s.units}` }).where('lot_id', '=', s.lot));
  const spendEntryQ = q((s) => db.insertInto('credit_ledger').values({
    entry_id: s.entry, agent_id: s.agent, kind: 'spend', amount_units: s.delta, lot_id: s.lot,
    expires_at: null, action: s.action, charge_id: s.charge, ref: null, created_at: s.now,
  }));
  const bumpQ = q((s) => db.insertInto('metering_daily').values({ agent_id: s.agent, pool: s.pool, day: s.day, count: s.delta })
    .onConflict((oc) => oc.columns(['agent_id', 'pool', 'day']).doUpdateSet({ count: sql`metering_daily.count + ${s.delta}` })));
  const countDaysQ = q<{ n: number }>((s) => db.selectFrom('metering_daily').select(sql<number>`coalesce(sum(count), 0)`.as('n'))
    .where('agent_id', '=', s.agent).where('pool', '=', s.pool).where('day', '>=', s.from).where('day', '<=', s.day));

  type Trx = Transaction<Database>;
  return {
    /** The agent's account row, locked for the rest of the transaction (PostgreSQL: FOR UPDATE); created on first use. */
    async lock(trx: Trx, agentId: string, now: number): Promise<Account> {
      let [row] = await lockQ({ agent: agentId }, trx);
      if (!row) {
        await ensureQ({ agent: agentId, now }, trx);
        [row] = await lockQ({ agent: agentId }, trx);
      }
      return normalizeAccount(row);
    },

    /**
     * Claims a free slot: the least recently used one if its last use is at least `windowMs` old (or
     * it was given back), else a new one while fewer than `floor` exist. False when the floor is used up.
     * Either way the slots used within the window never exceed the floor.
     */
    async claimSlot(trx: Trx, a: { agentId: string; pool: string; floor: number; now: number; windowMs: number; chargeId: string }): Promise<boolean> {
      const base = { agent: a.agentId, pool: a.pool, now: a.now, charge: a.chargeId };
      const [oldest] = await oldestSlotQ({ agent: a.agentId, pool: a.pool }, trx);
      if (oldest && Number(oldest.used_at) <= a.now - a.windowMs) {
        await reuseSlotQ({ ...base, slot: Number(oldest.slot) }, trx);
        return true;
      }
      const [top] = oldest ? await topSlotQ({ agent: a.agentId, pool: a.pool, floor: a.floor }, trx) : [];
      const next = top ? Number(top.slot) + 1 : 0;
      if (next >= a.floor) return false;
      await insertSlotQ({ ...base, slot: next }, trx);
      return true;
    },

    async freeUsed(trx: Trx, agentId: string, pool: string, floor: number, since: number): Promise<number> {
      return Number((await freeUsedQ({ agent: agentId, pool, floor, since }, trx))[0].n);
    },

    /** Live lots with credit left, in spending order. */
    lots: (trx: Trx, agentId: string, now: number) =>
      lotsQ({ agent: agentId, now }, trx).then((rows) => rows.map((r) => ({
        lot_id: r.lot_id, remaining_units: Number(r.remaining_units), expires_at: r.expires_at === null ? null : Number(r.expires_at),
      }))),

    /** Draws `units` from `lots` in order (the caller checked the balance under the lock); updates `lots` in place. */
    async spend(trx: Trx, lots: Lot[], s: { agentId: string; units: Units; action: string; chargeId: string; now: number }): Promise<void> {
      let left = s.units;
      for (const lot of lots) {
        if (left === 0) break;
        const take = Math.min(left, lot.remaining_units);
        if (take <= 0) continue;
        await takeLotQ({ lot: lot.lot_id, units: take }, trx);
        await spendEntryQ({ entry: newOrderedId(), agent: s.agentId, delta: -take, lot: lot.lot_id, action: s.action, charge: s.chargeId, now: s.now }, trx);
        lot.remaining_units -= take;
        left -= take;
      }
      if (left !== 0) throw new Error(`ledger: balance check and lots disagree for ${s.agentId}`);
    },

    bumpDaily: (trx: Trx, agentId: string, pool: string, day: string, delta: number) =>
      bumpQ({ agent: agentId, pool, day, delta }, trx).then(() => undefined),

    /** Calls in [fromDay, toDay] (inclusive UTC days). */
    countDays: (trx: Trx, agentId: string, pool: string, fromDay: string, toDay: string) =>
      countDaysQ({ agent: agentId, pool, from: fromDay, day: toDay }, trx).then((r) => Number(r[0].n)),
  };
}

export type MeterSql = ReturnType<typeof createMeterSql>;
