/**
 * The charge's statements, compiled once (src/infra/db/prepared.ts) and, on SQLite, run straight on
 * the connection inside the caller's transaction. With the agent's metering state in memory
 * (metering.ts) a charge is 4–5 indexed statements: the account lock and its new stamp, then one
 * slot write (free call) or one lot update and one ledger row (paid call), and the day counter; in a
 * transaction scope the lot, day-counter and (for charges never refunded) ledger writes are made once
 * per scope (metering.ts). The state itself (live lots, free slots) is read only when the stamp says
 * the copy is stale. The cold paths (refund, snapshot, grants) stay in meter-store.ts and
 * ledger-store.ts; both write the same tables.
 */
import type SQLite from 'better-sqlite3';
import { sql, type Compilable, type Kysely, type Transaction } from 'kysely';
import { prepared, preparedWrite } from '../../infra/db/prepared';
import type { Database } from '../../infra/db/schema';
import { newOrderedId } from '../../lib/ids';
import type { Units } from '../../lib/money';
import { emptyAccount, normalizeAccount, stakeAccount, type Account, type LockedAccount } from './account';

export interface Lot { lot_id: string; remaining_units: number; expires_at: number | null }
/** What `spend` leaves to its caller: the lot updates (`take`) and, with `row`, the ledger rows too. */
export interface SpendDeferral {
  take(lotId: string, units: Units): void;
  row?(lotId: string, units: Units, action: string, now: number): void;
}
export interface SlotRow { slot: number; used_at: number }
/** A credit hold of the agent (leases.ts): `units` set aside until `expires_at`. */
export interface HoldRow { hold_id: string; units: number; expires_at: number }

/** Credit the agent's live holds set aside at `now` (expired holds set nothing aside). */
export function heldUnits(holds: HoldRow[], now: number): Units {
  let n = 0;
  for (const h of holds) if (h.expires_at > now) n += h.units;
  return n;
}

const isLive = (l: Lot, now: number) => l.remaining_units > 0 && (l.expires_at === null || l.expires_at > now);

/** Balance and the earliest expiry of credit still held at `now`, from the lots. */
export function summarize(lots: Lot[], now: number): { units: Units; earliestExpiry: number | null } {
  let units = 0;
  let earliest: number | null = null;
  for (const l of lots) {
    if (!isLive(l, now)) continue;
    units += l.remaining_units;
    if (l.expires_at !== null && (earliest === null || l.expires_at < earliest)) earliest = l.expires_at;
  }
  return { units, earliestExpiry: earliest };
}

/** Takes `s.units` from the live `lots` in spending order (updating `lots` in place): what each lot gives. */
function drawFrom(lots: Lot[], s: { agentId: string; units: Units; now: number }): { lotId: string; units: Units }[] {
  const draws: { lotId: string; units: Units }[] = [];
  let left = s.units;
  for (const lot of lots) {
    if (left === 0) break;
    if (!isLive(lot, s.now)) continue;
    const take = Math.min(left, lot.remaining_units);
    draws.push({ lotId: lot.lot_id, units: take });
    lot.remaining_units -= take;
    left -= take;
  }
  if (left !== 0) throw new Error(`ledger: balance check and lots disagree for ${s.agentId}`);
  return draws;
}

export function createMeterSql(db: Kysely<Database>, sqlite?: SQLite.Database) {
  const S = {
    agent: '\u0000agent', pool: '\u0000pool', day: '\u0000day', from: '\u0000from', lot: '\u0000lot', charge: '\u0000charge',
    entry: '\u0000entry', action: '\u0000action',
    now: -987_654_321_000_002, slot: -987_654_321_000_004,
    delta: -987_654_321_000_005, units: -987_654_321_000_006, until: -987_654_321_000_007,
  };
  /** A compiled statement, always run in the caller's transaction; values left out bind as null. */
  const q = <R>(build: (s: typeof S) => Compilable<R>) => {
    const run = prepared<typeof S, R>(db, S, build, sqlite);
    return (values: Parameters<typeof run>[0], trx: Transaction<Database>) => run(values, trx);
  };

  const peekQ = q<Account>((s) => db.selectFrom('billing_accounts').selectAll().where('agent_id', '=', s.agent));
  // Locks the row (an UPDATE holds its row lock to the end of the transaction on both engines) and
  // rotates the stamp. PostgreSQL: returning the row with the stamp it replaced, one round trip.
  // SQLite: the UPDATE, then the row read in the same transaction. There RETURNING is the dearer
  // way (measured: an 11-column UPDATE … RETURNING * ~12 µs against ~3 µs for the UPDATE and 3–6 µs
  // for the read; in the service, where it is the first write of every billing batch, the lock's
  // median went from 48–53 to ~40 µs).
  const rotate = (s: typeof S) => db.updateTable('billing_accounts')
    .set((eb) => ({ meter_prev_stamp: eb.ref('meter_stamp'), meter_stamp: s.charge }))
    .where('agent_id', '=', s.agent);
  const lockRow = sqlite
    ? (() => {
      const rotateW = preparedWrite(db, S, rotate, sqlite);
      return async (values: { agent: string; charge: string }, trx: Transaction<Database>): Promise<Account[]> =>
        (await rotateW(values, trx)) === 0 ? [] : peekQ(values, trx);
    })()
    : q<Account>((s) => rotate(s).returningAll());
  const ensureQ = q((s) => db.insertInto('billing_accounts').values({ ...emptyAccount(s.agent), created_at: s.now, updated_at: s.now })
    .onConflict((oc) => oc.column('agent_id').doNothing()));
  const restampQ = q((s) => db.updateTable('billing_accounts').set({ meter_stamp: s.charge }).where('agent_id', '=', s.agent));
  // Every free slot of a pool, least recently used first (the in-memory queue of metering.ts).
  const slotsQ = q<SlotRow>((s) => db.selectFrom('metering_free_slots').select(['slot', 'used_at'])
    .where('agent_id', '=', s.agent).where('pool', '=', s.pool).orderBy('used_at').orderBy('slot'));
  const insertSlotQ = q((s) => db.insertInto('metering_free_slots').values({ agent_id: s.agent, pool: s.pool, slot: s.slot, used_at: s.now, charge_id: s.charge }));
  const reuseSlotQ = q((s) => db.updateTable('metering_free_slots').set({ used_at: s.now, charge_id: s.charge })
    .where('agent_id', '=', s.agent).where('pool', '=', s.pool).where('slot', '=', s.slot));
  const lotsQ = q<Lot>((s) => db.selectFrom('credit_lots').select(['lot_id', 'remaining_units', 'expires_at'])
    .where('agent_id', '=', s.agent).where('remaining_units', '>', 0)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', s.now)]))
    // Soonest expiry first, purchased (never expiring) credit last.
    .orderBy(sql`case when expires_at is null then 1 else 0 end`).orderBy('expires_at').orderBy('created_at'));
  // Credit at stake: the lots of the agent's stake account (stake-ledger.ts).
  const stakedQ = q<{ n: number }>((s) => db.selectFrom('credit_lots').select(sql<number>`coalesce(sum(remaining_units), 0)`.as('n'))
    .where('agent_id', '=', s.agent));
  const takeLotQ = q((s) => db.updateTable('credit_lots').set({ remaining_units: sql`remaining_units - ${s.units}` }).where('lot_id', '=', s.lot));
  const spendEntryQ = q((s) => db.insertInto('credit_ledger').values({
    entry_id: s.entry, agent_id: s.agent, kind: 'spend', amount_units: s.delta, lot_id: s.lot,
    expires_at: null, action: s.action, charge_id: s.charge, ref: null, created_at: s.now,
  }));
  const bumpQ = q((s) => db.insertInto('metering_daily').values({ agent_id: s.agent, pool: s.pool, day: s.day, count: s.delta })
    .onConflict((oc) => oc.columns(['agent_id', 'pool', 'day']).doUpdateSet({ count: sql`metering_daily.count + ${s.delta}` })));
  const holdsQ = q<HoldRow>((s) => db.selectFrom('metering_holds').select(['hold_id', 'units', 'expires_at']).where('agent_id', '=', s.agent));
  const insertHoldQ = q((s) => db.insertInto('metering_holds').values({
    agent_id: s.agent, hold_id: s.entry, pool: s.pool, units: s.units, expires_at: s.until, created_at: s.now,
  }));
  const setHoldQ = q((s) => db.updateTable('metering_holds').set({ units: s.units, expires_at: s.until })
    .where('agent_id', '=', s.agent).where('hold_id', '=', s.entry));
  const dropHoldQ = q((s) => db.deleteFrom('metering_holds').where('agent_id', '=', s.agent).where('hold_id', '=', s.entry));
  const dropExpiredHoldsQ = q((s) => db.deleteFrom('metering_holds').where('agent_id', '=', s.agent).where('expires_at', '<=', s.now));
  const countDaysQ = q<{ n: number }>((s) => db.selectFrom('metering_daily').select(sql<number>`coalesce(sum(count), 0)`.as('n'))
    .where('agent_id', '=', s.agent).where('pool', '=', s.pool).where('day', '>=', s.from).where('day', '<=', s.day));

  // Outside any transaction (metering switched off: unmetered.ts checks its copy against it).
  const stampQ = prepared<typeof S, { meter_stamp: string | null }>(db, S, (s) => db.selectFrom('billing_accounts')
    .select('meter_stamp').where('agent_id', '=', s.agent), sqlite);

  type Trx = Transaction<Database>;
  /** `spend`'s writes: each draw's lot update (unless deferred) and ledger row; the rows' ids. */
  async function writeDraws(trx: Trx, draws: { lotId: string; units: Units }[], s: { agentId: string; action: string; chargeId: string; now: number },
    defer?: SpendDeferral): Promise<string[]> {
    const entries: string[] = [];
    for (const d of draws) {
      if (defer) defer.take(d.lotId, d.units);
      else await takeLotQ({ lot: d.lotId, units: d.units }, trx);
      const entry = newOrderedId();
      await spendEntryQ({ entry, agent: s.agentId, delta: -d.units, lot: d.lotId, action: s.action, charge: s.chargeId, now: s.now }, trx);
      entries.push(entry);
    }
    return entries;
  }
  return {
    /**
     * The agent's account row, locked for the rest of the transaction (the UPDATE's row lock on
     * PostgreSQL; on SQLite the caller's transaction holds the only connection), created on first
     * use, with a fresh stamp; `prev_stamp` is the one it replaced.
     */
    async lock(trx: Trx, agentId: string, now: number): Promise<LockedAccount> {
      const stamp = newOrderedId();
      let [row] = await lockRow({ agent: agentId, charge: stamp }, trx);
      if (!row) {
        await ensureQ({ agent: agentId, now }, trx);
        [row] = await lockRow({ agent: agentId, charge: stamp }, trx);
      }
      return { ...normalizeAccount(row), prev_stamp: row.meter_prev_stamp };
    },

    /** The account row without locking it (a dry-run decision). */
    peek: (trx: Trx, agentId: string) => peekQ({ agent: agentId }, trx).then(([r]) => (r ? normalizeAccount(r) : undefined)),

    /** The account's meter stamp, read on its own (no transaction): '' without an account. */
    stamp: (agentId: string) => stampQ({ agent: agentId }).then(([r]) => (r ? r.meter_stamp : '')),

    restamp: (trx: Trx, agentId: string, stamp: string) => restampQ({ agent: agentId, charge: stamp }, trx).then(() => undefined),

    /** A pool's free slots, least recently used first. */
    slots: (trx: Trx, agentId: string, pool: string) =>
      slotsQ({ agent: agentId, pool }, trx).then((rows) => rows.map((r) => ({ slot: Number(r.slot), used_at: Number(r.used_at) }))),

    newSlot: (trx: Trx, a: { agentId: string; pool: string; slot: number; now: number; chargeId: string }) =>
      insertSlotQ({ agent: a.agentId, pool: a.pool, slot: a.slot, now: a.now, charge: a.chargeId }, trx).then(() => undefined),

    reuseSlot: (trx: Trx, a: { agentId: string; pool: string; slot: number; now: number; chargeId: string }) =>
      reuseSlotQ({ agent: a.agentId, pool: a.pool, slot: a.slot, now: a.now, charge: a.chargeId }, trx).then(() => undefined),

    /** Lots with credit left and unexpired at `now`, in spending order. */
    lots: (trx: Trx, agentId: string, now: number) =>
      lotsQ({ agent: agentId, now }, trx).then((rows) => rows.map((r) => ({
        lot_id: r.lot_id, remaining_units: Number(r.remaining_units), expires_at: r.expires_at === null ? null : Number(r.expires_at),
      }))),

    /**
     * Draws `units` from the live `lots` in order (the caller checked the balance under the lock); updates `lots` in place.
     * Each draw's ledger row and the lot's own update are written at once, unless `defer` is given:
     * - `defer.take` takes the lot updates (to write one update per lot for several charges of one
     *   transaction, with `takeLot`); the ledger rows are still written at once, one per draw.
     * - `defer.row` as well: the ledger rows too are left to the caller (one spend row per lot and
     *   action for several charges that are never refunded, with `spendRow`).
     * Returns the ledger rows' ids written here (a refund finds them by key). With both parts left to
     * `defer` nothing is written, and the ids (none) come back as they are, not as a promise.
     */
    spend(trx: Trx, lots: Lot[], s: { agentId: string; units: Units; action: string; chargeId: string; now: number },
      defer?: SpendDeferral): string[] | Promise<string[]> {
      const draws = drawFrom(lots, s);
      if (!defer?.row) return writeDraws(trx, draws, s, defer);
      for (const d of draws) {
        defer.take(d.lotId, d.units);
        defer.row(d.lotId, d.units, s.action, s.now);
      }
      return [];
    },

    /** Credit the agent has at stake (its stake account's lots, stake-ledger.ts). */
    staked: (trx: Trx, agentId: string) => stakedQ({ agent: stakeAccount(agentId) }, trx).then((r) => Number(r[0].n)),

    /** Takes `units` from one lot (the deferred part of `spend`). */
    takeLot: (trx: Trx, lotId: string, units: Units) => takeLotQ({ lot: lotId, units }, trx).then(() => undefined),

    /**
     * One spend row for several charges of one transaction (the deferred rows of `spend`): `units` drawn
     * from `lotId` for `action`, with no charge id (no single charge; such charges are never refunded).
     */
    spendRow: (trx: Trx, r: { agentId: string; lotId: string; units: Units; action: string; now: number }) =>
      spendEntryQ({ entry: newOrderedId(), agent: r.agentId, delta: -r.units, lot: r.lotId, action: r.action, now: r.now }, trx).then(() => undefined),

    bumpDaily: (trx: Trx, agentId: string, pool: string, day: string, delta: number) =>
      bumpQ({ agent: agentId, pool, day, delta }, trx).then(() => undefined),

    /** The agent's credit holds (live or expired). */
    holds: (trx: Trx, agentId: string) =>
      holdsQ({ agent: agentId }, trx).then((rows) => rows.map((r) => ({ hold_id: r.hold_id, units: Number(r.units), expires_at: Number(r.expires_at) }))),

    /** Sets `units` aside for a hold until `expiresAt`; expired holds of the agent are deleted first. */
    async addHold(trx: Trx, h: { agentId: string; holdId: string; pool: string; units: Units; expiresAt: number; now: number }): Promise<void> {
      await dropExpiredHoldsQ({ agent: h.agentId, now: h.now }, trx);
      await insertHoldQ({ agent: h.agentId, entry: h.holdId, pool: h.pool, units: h.units, until: h.expiresAt, now: h.now }, trx);
    },

    setHold: (trx: Trx, agentId: string, holdId: string, units: Units, expiresAt: number) =>
      setHoldQ({ agent: agentId, entry: holdId, units, until: expiresAt }, trx).then(() => undefined),

    dropHold: (trx: Trx, agentId: string, holdId: string) => dropHoldQ({ agent: agentId, entry: holdId }, trx).then(() => undefined),

    /**
     * Deletes every hold, of any agent and instance, that lapsed at or before `before`. A lapsed hold
     * sets nothing aside; its instance died or stalled (a live one renews its holds on each settle),
     * and an agent that takes no new hold would keep the row forever. Returns how many.
     */
    dropLapsedHolds: async (before: number): Promise<number> =>
      Number((await db.deleteFrom('metering_holds').where('expires_at', '<=', before).executeTakeFirst()).numDeletedRows ?? 0),

    /** Calls in [fromDay, toDay] (inclusive UTC days). */
    countDays: (trx: Trx, agentId: string, pool: string, fromDay: string, toDay: string) =>
      countDaysQ({ agent: agentId, pool, from: fromDay, day: toDay }, trx).then((r) => Number(r[0].n)),
  };
}

export type MeterSql = ReturnType<typeof createMeterSql>;
