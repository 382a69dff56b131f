/**
 * An agent's billing account as held by a transaction scope (trx-scope.ts) that charges it several
 * times: what metering.ts decides on and what it writes once, when the scope ends.
 */
import type { Units } from '../../lib/money';
import type { SpendDeferral } from './meter-sql';
import type { MeterState } from './meter-state';
import type { Pool } from './pricing';
import type { LockedAccount } from './account';

/**
 * An agent's account as held by one transaction that charges it several times through a trx-scope
 * (a memory write batch, or billing's own batch): the lock (taken by the first charge, or by the
 * batch's `withLocks`), the metering state decided on, and the lot draws and day counts that are
 * written once, when the scope ends, instead of once per charge. Free-slot writes are written at
 * once; spend rows too, except for charges that are never refunded (`rows`).
 */
export interface Held {
  account: LockedAccount;
  state?: MeterState;
  takes: Map<string, Units>;
  /** Calls to add per pool and UTC day, keyed `pool day`. */
  bumps: Map<string, { pool: Pool; day: string; n: number }>;
  /**
   * Charges that are never refunded (a memory write batch's, see `chargeWithin`): their spend rows,
   * one per lot and action for the whole transaction, written when the scope ends. Absent: each
   * charge writes its own rows at once (a refund finds them).
   */
  rows?: Map<string, { lotId: string; action: string; units: Units; now: number }>;
  /** What `spend` puts off to the scope's end (made once per held account). */
  defer: SpendDeferral;
}

/** An account held by a transaction scope; `aggregate`: its charges' spend rows are written per lot and action at the end. */
export function holdAccount(account: LockedAccount, aggregate: boolean): Held {
  const h: Held = {
    account, takes: new Map(), bumps: new Map(),
    defer: { take: (lot, units) => h.takes.set(lot, (h.takes.get(lot) ?? 0) + units) },
  };
  if (aggregate) {
    const rows: NonNullable<Held['rows']> = (h.rows = new Map());
    h.defer.row = (lotId, units, action, now) => {
      const k = `${lotId} ${action}`;
      const r = rows.get(k);
      if (r) {
        r.units += units;
        r.now = now;
      } else {
        rows.set(k, { lotId, action, units, now });
      }
    };
  }
  return h;
}

/** Calls of `pool` put off in `held` for days in [from, to]. */
export function pendingCalls(held: Held | undefined, pool: Pool, from: string, to: string): number {
  let n = 0;
  if (held) for (const b of held.bumps.values()) if (b.pool === pool && b.day >= from && b.day <= to) n += b.n;
  return n;
}
