/**
 * SQL of the credit ledger. The ledger (credit_ledger) is append-only; credit_lots is its projection
 * (what is left of each grant or purchase), written in the same transaction so the balance is one
 * indexed read (spends are written by meter-sql.ts, the charge's hot path). `ledgerBalance` recomputes the balance from the ledger alone (tests prove they agree).
 * All functions take the caller's transaction: the caller holds the agent's account lock.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import { newOrderedId } from '../../lib/ids';
import type { Units } from '../../lib/money';

export type Db = Kysely<Database> | Transaction<Database>;

export interface Balance { units: Units; earliestExpiry: number | null }

const live = (now: number) => (eb: any) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]);

export async function balanceOf(db: Db, agentId: string, now: number): Promise<Balance> {
  const row = await db.selectFrom('credit_lots')
    .select([
      sql<number>`coalesce(sum(remaining_units), 0)`.as('units'),
      sql<number | null>`min(case when remaining_units > 0 then expires_at end)`.as('earliest'),
    ])
    .where('agent_id', '=', agentId).where(live(now))
    .executeTakeFirstOrThrow();
  return { units: Number(row.units), earliestExpiry: row.earliest === null ? null : Number(row.earliest) };
}

export interface NewLot { agentId: string; kind: 'grant' | 'purchase'; units: Units; expiresAt: number | null; ref: string; now: number }

/** Appends a grant or purchase and opens its lot. False when `ref` was already recorded (exactly once). */
export async function addLot(db: Db, lot: NewLot): Promise<boolean> {
  const seen = await db.selectFrom('credit_ledger').select('entry_id').where('ref', '=', lot.ref).executeTakeFirst();
  if (seen) return false;
  const id = newOrderedId();
  await db.insertInto('credit_ledger').values({
    entry_id: id, agent_id: lot.agentId, kind: lot.kind, amount_units: lot.units, lot_id: id,
    expires_at: lot.expiresAt, action: null, charge_id: null, ref: lot.ref, created_at: lot.now,
  }).execute();
  await db.insertInto('credit_lots').values({
    lot_id: id, agent_id: lot.agentId, kind: lot.kind, expires_at: lot.expiresAt, remaining_units: lot.units, created_at: lot.now,
  }).execute();
  return true;
}

/**
 * Returns what a charge spent to the lots it came from; a second call adds nothing. `entryIds` are the
 * charge's spend rows (from the charge itself): looked up by key, since no index covers charge_id
 * (migration 0403); rows of another charge or agent among them are ignored.
 */
export async function refundCharge(db: Db, agentId: string, chargeId: string, entryIds: string[], now: number): Promise<Units> {
  if (entryIds.length === 0) return 0;
  const spends = await db.selectFrom('credit_ledger').select(['entry_id', 'lot_id', 'amount_units', 'action'])
    .where('agent_id', '=', agentId).where('entry_id', 'in', entryIds).where('charge_id', '=', chargeId).where('kind', '=', 'spend').execute();
  let total = 0;
  for (const s of spends) {
    total += await giveBack(db, { agentId, chargeId, action: s.action, lotId: s.lot_id, units: -Number(s.amount_units), ref: `refund:${s.entry_id}`, now });
  }
  return total;
}

/** One refund row and its lot's credit back; nothing when `ref` was recorded before. */
async function giveBack(db: Db, r: { agentId: string; chargeId: string; action: string | null; lotId: string; units: Units; ref: string; now: number }): Promise<Units> {
  const seen = await db.selectFrom('credit_ledger').select('entry_id').where('ref', '=', r.ref).executeTakeFirst();
  if (seen) return 0;
  await db.insertInto('credit_ledger').values({
    entry_id: newOrderedId(), agent_id: r.agentId, kind: 'refund', amount_units: r.units, lot_id: r.lotId,
    expires_at: null, action: r.action, charge_id: r.chargeId, ref: r.ref, created_at: r.now,
  }).execute();
  await db.updateTable('credit_lots').set({ remaining_units: sql`remaining_units + ${r.units}` }).where('lot_id', '=', r.lotId).execute();
  return r.units;
}

/**
 * Gives back what one leased call drew (leases.ts), to the lots it came from. Its spend rows were
 * written for many calls at once, so the call's own draws are given; `ref` keeps it to once per
 * call and lot.
 */
export async function refundDraws(db: Db, agentId: string, chargeId: string, action: string, draws: { lotId: string; units: Units }[], now: number): Promise<Units> {
  let total = 0;
  for (const d of draws) total += await giveBack(db, { agentId, chargeId, action, lotId: d.lotId, units: d.units, ref: `refund:${chargeId}:${d.lotId}`, now });
  return total;
}

/** The balance derived from the append-only ledger alone (no projection). */
export async function ledgerBalance(db: Db, agentId: string, now: number): Promise<Units> {
  const lots = await db.selectFrom('credit_ledger')
    .select(['lot_id', sql<number>`sum(amount_units)`.as('remaining'), sql<number | null>`max(expires_at)`.as('expires_at')])
    .where('agent_id', '=', agentId).groupBy('lot_id').execute();
  return lots.filter((l) => l.expires_at === null || Number(l.expires_at) > now).reduce((a, l) => a + Number(l.remaining), 0);
}

export function ledgerEntries(db: Db, agentId: string) {
  return db.selectFrom('credit_ledger').selectAll().where('agent_id', '=', agentId).orderBy('created_at').execute();
}
