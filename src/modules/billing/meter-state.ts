/**
 * An instance's in-memory copy of agents' metering state: the live credit lots and each pool's free
 * slots as a queue, least recently used first. A copy is valid only under the account stamp it was
 * made under (billing_accounts.meter_stamp, rewritten by every transaction that locks the account):
 * the charge reads the stamp with its lock, and a different stamp (another instance charged, credit
 * was granted or refunded, or this instance's last charge rolled back) means "reload from the
 * database". So the copy saves reads, never decides on stale data, and the database stays the truth.
 */
import type { HoldRow, Lot, SlotRow } from './meter-sql';

/** A pool's free slots ordered by last use (oldest first); `top` is the highest slot number that exists. */
export interface SlotQueue { slots: SlotRow[]; top: number }

export interface MeterState {
  /** The stamp this copy matches; null while a charge is changing it (never cached in that state). */
  stamp: string | null;
  lots?: Lot[];
  /** Credit the agent has at stake (stake-ledger.ts), read with the first figures of the copy. */
  staked?: number;
  /** The agent's credit holds (leases.ts), read with the first paid decision of the copy. */
  holds?: HoldRow[];
  pools: Map<string, SlotQueue>;
  /**
   * Calls of a pool this UTC month up to and including `day`, counted once from the daily counters
   * (and the calls a transaction scope has not written yet), then kept up to date by each charge.
   */
  months: Map<string, { day: string; n: number }>;
}

export function slotQueue(rows: SlotRow[]): SlotQueue {
  let top = -1;
  for (const r of rows) if (r.slot > top) top = r.slot;
  return { slots: rows, top };
}

/**
 * What claiming a free slot would do at `now`: reuse the least recently used slot if its last use is
 * at least `windowMs` old (or it was given back), else open a new one while fewer than `floor` exist;
 * undefined when the floor is used up. Same rule as before caching: the slots used within the window
 * never exceed the floor.
 */
export function pickSlot(q: SlotQueue, floor: number, now: number, windowMs: number): { slot: number; reuse: boolean } | undefined {
  const oldest = q.slots[0];
  if (oldest && oldest.used_at <= now - windowMs) return { slot: oldest.slot, reuse: true };
  if (q.top + 1 < floor) return { slot: q.top + 1, reuse: false };
  return undefined;
}

/** Records the claim in the queue: the slot becomes the most recently used. */
export function useSlot(q: SlotQueue, pick: { slot: number; reuse: boolean }, now: number): void {
  if (pick.reuse) q.slots.shift();
  else q.top = pick.slot;
  q.slots.push({ slot: pick.slot, used_at: now });
}

/** Free calls used within the window ending at `now`. */
export function usedInWindow(q: SlotQueue, now: number, windowMs: number): number {
  let n = 0;
  for (const s of q.slots) if (s.used_at > now - windowMs) n++;
  return n;
}

/** A bounded map of agents' states, least recently used evicted first. */
export function createMeterStates(max = 1000) {
  const states = new Map<string, MeterState>();
  return {
    /** The cached state when it matches `stamp`, else a fresh empty one (to be filled from the database). */
    take(agentId: string, stamp: string | null): MeterState {
      const s = states.get(agentId);
      if (s) states.delete(agentId);
      return s && stamp !== null && s.stamp === stamp ? s : { stamp: null, pools: new Map(), months: new Map() };
    },
    /** The cached state as it is (not taken out, no LRU bump), for a read that decides nothing. */
    peek(agentId: string): MeterState | undefined {
      return states.get(agentId);
    },
    drop(agentId: string): void {
      states.delete(agentId);
    },
    put(agentId: string, state: MeterState): void {
      if (state.stamp === null) return;
      states.set(agentId, state);
      if (states.size > max) states.delete(states.keys().next().value!);
    },
    get size() {
      return states.size;
    },
  };
}

export type MeterStates = ReturnType<typeof createMeterStates>;
