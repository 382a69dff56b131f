/**
 * Credit leases: paid calls decided in memory from credit set aside in the database.
 *
 * Every charge is normally decided inside a transaction holding the agent's account lock and is on
 * disk before its answer (decide.ts, charge-batch.ts). For an agent calling a pool past its free floor
 * with ample credit, that transaction is most of what a cheap call costs (a cached search). So when
 * such a charge is made, the same transaction also takes a **hold**: a block of the agent's credit
 * (`calls` × the action's price) set aside for this instance (metering_holds), on disk with the
 * charge. Until the lease ends, this instance answers further paid calls of that agent and action
 * from the block in memory, with no transaction of their own, and **settles** them shortly after
 * (every `settleMs`, one transaction for every lease with calls; at once when the block is used up):
 * their spend rows (one per lot and action, as a memory write batch writes them), the day counter,
 * and the hold: made smaller by what they spent, then topped up again to twice the calls answered
 * since the last settle (at least one block of `calls`, at most 16), if the credit allows it as it
 * would a new hold.
 *
 * Why it stays exact with several instances: every charge decided under the lock (any instance)
 * counts only the credit that no live hold sets aside, and a hold is taken only from that credit,
 * so the blocks of all instances and the free credit never overlap. The credit stays in its lots
 * until a settle spends it, so a hold is no spend: the balance shown is the agent's.
 *
 * When a lease is used (all must hold, otherwise the call is charged under the lock as before):
 * - a credit-metered tier (not a legacy monthly quota), the pool's free floor used up when the hold
 *   was taken, and the lease ends before the first free call leaves the rolling window (so no call
 *   is charged while a free one is due) and at the end of the UTC day (day counters);
 * - the credit not held by anyone is at least five times what the hold (or its top-up) takes (so
 *   another instance is not refused while a block sits idle here), and with auto top-up on, the
 *   hold does not reach under its threshold (so leased calls never open a dip);
 * - the same stored tier as the charge that took the hold.
 * A lease ends `useMs` after its last settle (an idle lease), at the times above, when a settle finds
 * a free call due again or the credit too low for a top-up, and at shutdown; its hold's row is
 * deleted by the settle that writes its last calls.
 *
 * What a crash costs: the hold expires `holdMs` after its last settle and sets nothing aside from
 * then; the calls answered since that settle (at most `settleMs` of them) are never recorded, so
 * the agent is not charged for them and they are not counted. No credit is lost or spent twice.
 * Readers that must see every call (the billing snapshot, GET /v1/usage) settle the agent first.
 */
import type { Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { Clock } from '../../lib/clock';
import { newOrderedId } from '../../lib/ids';
import { formatUsd, type Units } from '../../lib/money';
import { tierOf } from '../../lib/tiers';
import { DAY_MS, utcDay } from '../../lib/utc';
import type { LockedAccount } from './account';
import { refundDraws } from './ledger-store';
import { heldUnits, summarize, type MeterSql } from './meter-sql';
import { pickSlot, type MeterState } from './meter-state';
import type { Charge, Figures, LeaseOptions, PoolCounts, UsageSnapshot } from './metering-contract';
import { ACTION_POOL, ACTION_PRICE, FLOOR_WINDOW_MS, FREE_FLOORS, type MeteredAction, type Pool } from './pricing';
import type { BillingStore } from './store';

type Draw = { lotId: string; units: Units };
interface LeasedCall {
  chargeId: string;
  phase: 'open' | 'settling' | 'settled' | 'refunded';
  /** Once settled and charged: the settle's draws (in spending order) and this call's place among its calls. */
  share?: { draws: Draw[]; index: number };
}

/** What the `index`-th call of a settle drew: its `price` units of the settle's draws, in order. */
function shareOf(s: { draws: Draw[]; index: number }, price: Units): Draw[] {
  const out: Draw[] = [];
  let from = s.index * price;
  let need = price;
  for (const d of s.draws) {
    if (need === 0) break;
    if (from >= d.units) {
      from -= d.units;
      continue;
    }
    const take = Math.min(d.units - from, need);
    out.push({ lotId: d.lotId, units: take });
    need -= take;
    from = 0;
  }
  return out;
}

export interface Lease {
  holdId: string;
  agentId: string;
  action: MeteredAction;
  pool: Pool;
  price: Units;
  storedTier: string;
  /** False until the transaction that took the hold is on disk. */
  active: boolean;
  /** Units the hold's row sets aside (what settles have not spent yet). */
  held: Units;
  /** Of `held`, what new calls may still use. */
  left: Units;
  useUntil: number;
  day: string;
  calls: LeasedCall[];
  /** The figures of the last lock (hold or settle); leased calls adjust the balance and the month's count. */
  figures: Figures;
  tierName: Charge['tier'];
  /** Set while a settle of this lease runs (calls answered meanwhile wait for the next one). */
  settling?: Promise<void>;
  /** Calls answered since the last settle began: the next top-up holds twice as many, up to 16 blocks. */
  pace: number;
  /**
   * Calls answered and not yet in the database (counted down inside the settle's transaction, so a
   * charge decided under the lock after it never counts a call twice): what the figures add.
   */
  unwritten: number;
  /** A settle decided the lease ends: it answers nothing more; ended once its last calls are written. */
  closing: boolean;
  ended: boolean;
}

export interface LeaseDeps {
  store: BillingStore;
  clock: Clock;
  options: LeaseOptions;
  /** The agent's metering state under `account`'s lock (the cached copy if its stamp matches, else a fresh one). */
  stateOf(account: LockedAccount): MeterState;
  /** The state now matches what this transaction wrote (meter-core.ts `keep`). */
  keep(agentId: string, state: MeterState, account: LockedAccount): void;
  /** `_svc.usage` and the pool counts from `state` (figures.ts). */
  figures(trx: Transaction<Database>, agentId: string, state: MeterState, storedTier: string, account: LockedAccount, pool: Pool, now: number, except: Lease): Promise<Figures>;
  /** Loads what the state lacks of the live lots, the holds and the pool's free slots. */
  load(trx: Transaction<Database>, agentId: string, state: MeterState, pool: Pool, now: number): Promise<void>;
  log?: (msg: string, err?: unknown) => void;
}

/** The held block is at most this share of the credit no hold sets aside. */
const MAX_SHARE = 5;

/** What a settle did for one lease, applied once its transaction is on disk. */
interface Settled { l: Lease; useUntil: number; end: boolean; held: Units; calls: LeasedCall[]; payable: number; draws: Draw[] }

export function createLeases(deps: LeaseDeps): Leases {
  return new Leases(deps);
}

/**
 * A call answered from a lease: the figures of the last lock, less (and plus) what the lease's
 * calls not yet written use; the caller adds the commons part of `usage`. (A class: one shape for
 * every such charge, and no closure made per call.)
 */
class LeasedCharge implements Charge {
  readonly chargeId: string;
  readonly agentId: string;
  readonly action: MeteredAction;
  readonly pool: Pool;
  readonly free = false;
  readonly costUnits: Units;
  readonly tier: Charge['tier'];
  readonly poolCounts?: PoolCounts;
  readonly usage: UsageSnapshot;
  constructor(private readonly leases: Leases, private readonly lease: Lease, private readonly call: LeasedCall) {
    const f = lease.figures;
    const u = f.usage;
    this.chargeId = call.chargeId;
    this.agentId = lease.agentId;
    this.action = lease.action;
    this.pool = lease.pool;
    this.costUnits = lease.price;
    this.tier = lease.tierName;
    if (f.poolCounts) this.poolCounts = { callsThisMonth: f.poolCounts.callsThisMonth + lease.unwritten, freeUsedInWindow: f.poolCounts.freeUsedInWindow };
    this.usage = {
      credits_remaining_usd: formatUsd(f.balanceUnits - lease.unwritten * lease.price), credits_staked_usd: u.credits_staked_usd, tier_label: u.tier_label, auto_topup: u.auto_topup,
      credits_expire_at: u.credits_expire_at, commons_url: null, commons_size: null, commons_contributions: null, browse_calls_remaining: u.browse_calls_remaining,
    };
  }

  refund(): Promise<void> {
    return this.leases.refundCall(this.lease, this.call);
  }
}

/** This instance's credit leases (see the module comment). */
export class Leases {
  private readonly m: MeterSql;
  /** Paid calls per block. */
  private readonly blockCalls: number;
  private readonly settleMs: number;
  private readonly useMs: number;
  private readonly holdMs: number;
  /** The leases of each agent, by action (at most one per agent and action). */
  private readonly byAgent = new Map<string, Map<MeteredAction, Lease>>();
  private count = 0;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly deps: LeaseDeps) {
    this.m = deps.store.sql;
    this.blockCalls = deps.options.calls;
    this.settleMs = deps.options.settleMs ?? 100;
    this.useMs = deps.options.useMs ?? 2_000;
    this.holdMs = deps.options.holdMs ?? 30_000;
  }

  private current(agentId: string, action: MeteredAction): Lease | undefined {
    return this.byAgent.get(agentId)?.get(action);
  }

  private agentLeases(agentId: string): Iterable<Lease> {
    return this.byAgent.get(agentId)?.values() ?? [];
  }

  private allLeases(): Lease[] {
    return [...this.byAgent.values()].flatMap((m) => [...m.values()]);
  }

  /**
   * After a paid charge decided under the lock (billing's own batch): takes a hold for the agent's
   * next calls of this action when the rules allow. The lease answers only once `activate` is called
   * (after the transaction is on disk); `discard` if it rolled back.
   */
  async consider(trx: Transaction<Database>, c: { agentId: string; action: MeteredAction; storedTier: string; now: number },
    account: LockedAccount, state: MeterState, charged: { free: boolean; costUnits: Units; tier: Charge['tier'] }, figures: Figures): Promise<Lease | undefined> {
    if (this.blockCalls <= 0 || this.closed || charged.free || charged.costUnits <= 0) return undefined;
    const pool = ACTION_POOL[c.action];
    if (FREE_FLOORS[pool] === null || tierOf(charged.tier).metering === 'monthly') return undefined;
    if (this.current(c.agentId, c.action)) return undefined;
    const price = ACTION_PRICE[c.action];
    const units = this.blockCalls * price;
    await this.deps.load(trx, c.agentId, state, pool, c.now);
    if (!this.affords(state, account, units, c.now)) return undefined;
    const useUntil = this.useLimit(state, pool, c.now);
    if (useUntil <= c.now) return undefined;
    const holdId = newOrderedId();
    const expires = c.now + this.holdMs;
    await this.m.addHold(trx, { agentId: c.agentId, holdId, pool, units, expiresAt: expires, now: c.now });
    state.holds = [...state.holds!.filter((h) => h.expires_at > c.now), { hold_id: holdId, units, expires_at: expires }];
    const lease: Lease = {
      holdId, agentId: c.agentId, action: c.action, pool, price, storedTier: c.storedTier, active: false,
      held: units, left: units, useUntil, day: utcDay(c.now), calls: [], figures: { ...figures, usage: { ...figures.usage } }, tierName: charged.tier,
      pace: 0, unwritten: 0, closing: false, ended: false,
    };
    let mine = this.byAgent.get(c.agentId);
    if (!mine) this.byAgent.set(c.agentId, (mine = new Map()));
    mine.set(c.action, lease);
    this.count++;
    return lease;
  }

  activate(l: Lease): void {
    // Closed meanwhile: the hold expires unused.
    if (this.current(l.agentId, l.action) !== l || this.closed) return;
    l.active = true;
    this.schedule();
  }

  discard(l: Lease): void {
    this.endLease(l);
  }

  /**
   * A paid call answered from the agent's lease, if one may answer it now (see the module comment);
   * undefined: charge it under the lock.
   */
  use(agentId: string, action: MeteredAction, storedTier: string): Charge | undefined {
    if (this.count === 0 || this.closed) return undefined;
    const l = this.current(agentId, action);
    if (!l || !l.active || l.closing || l.left < l.price || l.storedTier !== storedTier) return undefined;
    // (`useUntil` is never past the end of the lease's UTC day.)
    if (this.deps.clock.now() >= l.useUntil) return undefined;
    l.left -= l.price;
    const call: LeasedCall = { chargeId: newOrderedId(), phase: 'open' };
    l.calls.push(call);
    l.pace++;
    l.unwritten++;
    // Used up: settled (and topped up) at once rather than at the next tick.
    if (l.left < l.price) setImmediate(this.settleAgent, agentId);
    else this.schedule();
    return new LeasedCharge(this, l, call);
  }

  /**
   * Credit this instance holds for the agent and has not used yet goes to a charge decided under the
   * lock that the unheld credit cannot pay (a memory write, a browse, a search of another action, a
   * call made before the lease answers): up to `units`, taken from leases not settling right now,
   * whose hold rows are made smaller in `trx`. Returns the units given. (Another instance's holds
   * cannot be given back this way: there a refusal can happen while credit is held, until that
   * lease's next settle or end; see docs/billing.md.)
   */
  async yieldTo(trx: Transaction<Database>, agentId: string, state: MeterState, units: Units): Promise<Units> {
    let given = 0;
    for (const l of this.agentLeases(agentId)) {
      if (given >= units) break;
      if (l.settling || l.ended) continue;
      const row = state.holds?.find((h) => h.hold_id === l.holdId);
      const x = Math.min(l.left, units - given);
      if (!row || x <= 0) continue;
      l.left -= x;
      l.held -= x;
      given += x;
      await this.m.setHold(trx, agentId, l.holdId, l.held, row.expires_at);
      state.holds = state.holds!.map((h) => (h === row ? { ...h, units: l.held } : h));
    }
    return given;
  }

  /** Calls of `pool` (and credit, of every pool) the agent's leases here have answered and not yet written, but `except`'s. */
  unwritten(agentId: string, pool: Pool, except?: Lease): { calls: number; units: Units } {
    let calls = 0;
    let units = 0;
    for (const l of this.agentLeases(agentId)) {
      if (l === except) continue;
      if (l.pool === pool) calls += l.unwritten;
      units += l.unwritten * l.price;
    }
    return { calls, units };
  }

  /**
   * Figures just computed under the agent's lock (`f`, without the unwritten calls of every lease
   * but `except`'s) become the base of what the agent's leases show: each adds back its own
   * unwritten calls, since it subtracts them per answer. So a charge under the lock in between is
   * never missing from a leased answer's balance or count.
   */
  refresh(agentId: string, pool: Pool, f: Figures, except?: Lease): void {
    for (const l of this.agentLeases(agentId)) {
      const own = l === except ? 0 : l.unwritten;
      const counts = l.pool === pool ? f.poolCounts : undefined;
      l.figures = {
        usage: { ...f.usage },
        balanceUnits: f.balanceUnits + own * l.price,
        poolCounts: counts ? { ...counts, callsThisMonth: counts.callsThisMonth - own } : l.figures.poolCounts,
      };
    }
  }

  /** What `yieldTo` could give the agent now (a dry-run decision counts it as the agent's). */
  spare(agentId: string): Units {
    let n = 0;
    for (const l of this.agentLeases(agentId)) if (!l.settling && !l.ended) n += Math.max(0, l.left);
    return n;
  }

  /**
   * Settles the leases of the agent (or all) that are due now (calls to write, or the lease must
   * end); first waits for settles already running. Readers that must see every call call this first.
   */
  async settle(agentId?: string): Promise<void> {
    const mine = agentId === undefined ? this.allLeases() : [...this.agentLeases(agentId)];
    for (const l of mine) if (l.settling) await l.settling;
    const now = this.deps.clock.now();
    const due = mine.filter((l) => l.active && !l.ended && !l.settling
      && (l.calls.some((c) => c.phase === 'open') || l.closing || now >= l.useUntil || l.left < l.price || l.day !== utcDay(now)));
    await this.settleLeases(due, false);
  }

  private readonly settleAgent = (agentId: string): void => void this.settle(agentId);

  /** Settles everything and ends every lease (shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const all = this.allLeases();
    for (const l of all) if (l.settling) await l.settling;
    await this.settleLeases(all.filter((l) => l.active), true);
    this.byAgent.clear();
    this.count = 0;
  }

  /** A leased call's refund: to the block while unwritten, else to the lots it was drawn from. */
  async refundCall(l: Lease, call: LeasedCall): Promise<void> {
    while (call.phase === 'settling' && l.settling) await l.settling;
    if (call.phase === 'open') {
      call.phase = 'refunded';
      l.calls = l.calls.filter((c) => c !== call);
      l.unwritten--;
      if (!l.ended) l.left += l.price;
      return;
    }
    if (call.phase !== 'settled') return;
    call.phase = 'refunded';
    const { clock } = this.deps;
    await this.deps.store.withLocks([l.agentId], clock.now(), async (trx) => {
      if (call.share) await refundDraws(trx, l.agentId, call.chargeId, l.action, shareOf(call.share, l.price), clock.now());
      await this.m.bumpDaily(trx, l.agentId, l.pool, l.day, -1);
    });
  }

  /** When the lease must stop answering: `useMs` from now, before a free call is due, before the UTC day ends. */
  private useLimit(state: MeterState, pool: Pool, now: number): number {
    const q = state.pools.get(pool);
    const nextFree = q?.slots[0] ? q.slots[0].used_at + FLOOR_WINDOW_MS : now;
    return Math.min(now + this.useMs, nextFree, (Math.floor(now / DAY_MS) + 1) * DAY_MS);
  }

  /** Whether the credit lets a block of `units` be held under `account`'s lock (see the module comment). */
  private affords(state: MeterState, account: LockedAccount, units: Units, now: number): boolean {
    const free = summarize(state.lots!, now).units - heldUnits(state.holds!, now);
    if (free < MAX_SHARE * units) return false;
    return account.auto_topup_enabled !== 1 || free - units >= account.auto_topup_threshold_units;
  }

  private schedule(): void {
    if (this.timer || this.closed || this.count === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.settle().finally(() => this.schedule());
    }, this.settleMs);
    this.timer.unref();
  }

  private endLease(l: Lease): void {
    l.ended = true;
    const mine = this.byAgent.get(l.agentId);
    if (mine?.get(l.action) !== l) return;
    mine.delete(l.action);
    this.count--;
    if (mine.size === 0) this.byAgent.delete(l.agentId);
  }

  /**
   * Writes the calls of these leases (one transaction, the agents' locks), tops their holds up and
   * ends the leases that must end (`end`: all of them). Calls a lease answers while it settles are
   * covered by its hold still and written by the next settle.
   */
  private async settleLeases(list: Lease[], end: boolean): Promise<void> {
    if (list.length === 0) return;
    const now = this.deps.clock.now();
    const run = this.startSettle(list);
    const written = new Map<Lease, number>();
    const outcome: Settled[] = [];
    try {
      await this.deps.store.withLocks([...new Set(list.map((l) => l.agentId))], now, async (trx, accounts) => {
        const states = new Map<string, MeterState>();
        for (const { l, calls: due } of run.batch) {
          const account = accounts.get(l.agentId)!;
          let state = states.get(l.agentId);
          if (!state) states.set(l.agentId, (state = this.deps.stateOf(account)));
          outcome.push(await this.settleOne(trx, l, due, account, state, { pace: run.paces.get(l)!, end, now }, written));
        }
      }, { deferFlush: true });
      await this.deps.store.durable();
      for (const o of outcome) this.applySettled(o);
    } catch (e) {
      // Rolled back: the calls are written by the next settle.
      for (const b of run.batch) for (const c of b.calls) if (c.phase === 'settling') c.phase = 'open';
      for (const [l, n] of written) l.unwritten += n;
      this.deps.log?.('billing lease settle failed', e);
      if (end || this.closed) for (const l of list) this.endLease(l);
    } finally {
      for (const l of list) if (l.settling === run.done) l.settling = undefined;
      run.release();
    }
  }

  /** Marks the leases as settling and their open calls as being written; `release` ends the wait of refunds. */
  private startSettle(list: Lease[]) {
    let release!: () => void;
    const done = new Promise<void>((r) => (release = r));
    for (const l of list) l.settling = done;
    const batch = list.map((l) => ({ l, calls: l.calls.filter((c) => c.phase === 'open') }));
    const paces = new Map(list.map((l) => [l, l.pace]));
    for (const l of list) l.pace = 0;
    for (const b of batch) for (const c of b.calls) c.phase = 'settling';
    return { done, release, batch, paces };
  }

  /** One lease's settle under its agent's lock: its calls written, its hold renewed or ended, its figures refreshed. */
  private async settleOne(trx: Transaction<Database>, l: Lease, due: LeasedCall[], account: LockedAccount, state: MeterState,
    at: { pace: number; end: boolean; now: number }, written: Map<Lease, number>): Promise<Settled> {
    state.stamp = null;
    await this.deps.load(trx, l.agentId, state, l.pool, at.now);
    const { payable, spent, draws } = await this.writeCalls(trx, l, due, state, at.now, written);
    const { useUntil, last, held } = await this.renewHold(trx, l, state, account, spent, at);
    // The figures function gives them to the agent's leases (`refresh`).
    await this.deps.figures(trx, l.agentId, state, l.storedTier, account, l.pool, at.now, l);
    this.deps.keep(l.agentId, state, account);
    return { l, useUntil, end: last, held, calls: due, payable, draws };
  }

  /**
   * The due calls' spend and count. They draw from the lots in spending order, one after the other,
   * as if charged alone: one draw per lot for all of them (one lot update and one spend row per lot).
   * The draws are kept in order, so the n-th call's own share is known if it is refunded later
   * (`shareOf`). Only if this instance stalled past its hold's expiry could other charges have taken
   * the credit: the calls that cannot be drawn then are not charged (logged).
   */
  private async writeCalls(trx: Transaction<Database>, l: Lease, due: LeasedCall[], state: MeterState, now: number,
    written: Map<Lease, number>): Promise<{ payable: number; spent: Units; draws: Draw[] }> {
    const lots = state.lots!;
    const payable = Math.min(due.length, Math.floor(summarize(lots, now).units / l.price));
    if (payable < due.length) this.deps.log?.(`billing lease ${l.holdId}: credit gone before ${due.length - payable} calls were settled (hold expired); not charged`);
    const spent = payable * l.price;
    const draws: Draw[] = [];
    if (spent > 0) {
      // eslint-disable-next-line @typescript-eslint/no-floating-promises -- with both parts deferred, spend writes nothing and returns at once (ids, not a promise)
      this.m.spend(trx, lots, { agentId: l.agentId, units: spent, action: l.action, chargeId: '', now }, { take: (lotId, units) => void draws.push({ lotId, units }), row: () => {} });
    }
    for (const d of draws) {
      await this.m.takeLot(trx, d.lotId, d.units);
      await this.m.spendRow(trx, { agentId: l.agentId, lotId: d.lotId, units: d.units, action: l.action, now });
    }
    if (due.length > 0) {
      await this.m.bumpDaily(trx, l.agentId, l.pool, l.day, due.length);
      const counted = state.months.get(l.pool);
      if (counted?.day === l.day) counted.n += due.length;
      else if (counted) state.months.delete(l.pool);
      l.unwritten -= due.length;
      written.set(l, due.length);
    }
    return { payable, spent, draws };
  }

  /**
   * What the hold still sets aside once the settled calls are spent, topped up to a whole block again
   * (twice the calls of the last interval, one to 16 blocks) if the credit allows it as it would a
   * new hold; or the lease ends (`end`, shutdown, past its time, a free call due, the day over, no
   * credit for a top-up), its row deleted by the settle that writes its last calls.
   */
  private async renewHold(trx: Transaction<Database>, l: Lease, state: MeterState, account: LockedAccount, spent: Units,
    at: { pace: number; end: boolean; now: number }): Promise<{ useUntil: number; last: boolean; held: Units }> {
    const { now } = at;
    const remaining = Math.max(0, l.held - spent);
    state.holds = state.holds!.map((x) => (x.hold_id === l.holdId ? { ...x, units: remaining } : x));
    const topUp = Math.max(0, Math.min(16 * this.blockCalls, Math.max(this.blockCalls, 2 * at.pace)) * l.price - remaining);
    const freeDue = pickSlot(state.pools.get(l.pool)!, FREE_FLOORS[l.pool]!, now, FLOOR_WINDOW_MS) !== undefined;
    const useUntil = this.useLimit(state, l.pool, now);
    // Past its time (idle since its last settle), a lease answers nothing more: it ends, not renewed.
    const ending = at.end || this.closed || l.closing || now >= l.useUntil || freeDue || useUntil <= now || l.day !== utcDay(now)
      || (topUp > 0 && !this.affords(state, account, topUp, now));
    if (ending) l.closing = true;
    // Calls answered while this settle runs are in the hold still: it ends with the next settle.
    const last = ending && !l.calls.some((c) => c.phase === 'open');
    const held = last ? 0 : ending ? remaining : remaining + topUp;
    if (last) {
      await this.m.dropHold(trx, l.agentId, l.holdId);
      state.holds = state.holds.filter((x) => x.hold_id !== l.holdId);
    } else {
      const expires = now + this.holdMs;
      await this.m.setHold(trx, l.agentId, l.holdId, held, expires);
      state.holds = state.holds.map((x) => (x.hold_id === l.holdId ? { ...x, units: held, expires_at: expires } : x));
    }
    return { useUntil, last, held };
  }

  /** A settle on disk: its calls are settled (each with its share, if charged) and the lease's block is what the hold now sets aside. */
  private applySettled(o: Settled): void {
    const { l } = o;
    o.calls.forEach((c, i) => {
      c.phase = 'settled';
      c.share = i < o.payable ? { draws: o.draws, index: i } : undefined;
    });
    // What the hold sets aside now, less what calls answered while it settled use.
    l.calls = l.calls.filter((c) => c.phase === 'open' || c.phase === 'settling');
    l.held = o.held;
    l.left = o.held - l.calls.length * l.price;
    l.useUntil = o.useUntil;
    if (o.end) this.endLease(l);
  }
}
