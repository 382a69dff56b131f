/**
 * What metering offers its callers and needs from the rest of svc: the charge objects, the
 * `Metering` port every metered route depends on, and the narrow ports and dependencies of the
 * service, with the shapes its parts pass each other (one place for the types, so the parts import
 * this file and not each other). The service itself is metering.ts (which re-exports the port).
 */
import type { Transaction } from 'kysely';
import type { Clock } from '../../lib/clock';
import type { Units } from '../../lib/money';
import type { TierName } from '../../lib/tiers';
import type { Database } from '../../infra/db/schema';
import type { MeteredAction, Pool } from './pricing';
import type { Account } from './account';
import type { BillingStore } from './store';

/** `_svc.usage` of metered responses. */
export interface UsageSnapshot {
  credits_remaining_usd: string;
  /** Credit the agent has at stake (locked or cooling): not spendable, not in credits_remaining_usd. */
  credits_staked_usd: string;
  tier_label: string;
  auto_topup: boolean;
  credits_expire_at: string | null;
  commons_url: string | null;
  commons_size: number | null;
  commons_contributions: number | null;
  browse_calls_remaining: number | null;
}

export interface ChargeOptions {
  /** The agent's stored tier when the caller has it (agentOf(request).tier); looked up otherwise. */
  tier?: string;
}

export interface Charge {
  chargeId: string;
  agentId: string;
  action: MeteredAction;
  pool: Pool;
  /** True when the call used the free floor or an included monthly quota. */
  free: boolean;
  costUnits: Units;
  tier: TierName;
  usage: UsageSnapshot;
  /**
   * Search-pool charges (search, blob_search): the pool's calls this UTC month (this one included)
   * and free calls used in the rolling window, read in the charge's own transaction, so a search
   * response's `usage` needs no further read.
   */
  poolCounts?: PoolCounts;
  /** Gives the call back (free slot or credit, and the count). Idempotent. */
  refund(): Promise<void>;
  /**
   * What a refund of this charge needs, as plain JSON, for work that outlives the request (an async
   * parse kept in a queue): `Metering.refundReceipt` gives the call back from it later, on any
   * instance. Charges decided under the lock have one; a call answered from a credit lease (whose
   * share lives in this instance's memory until it is settled) and an uncounted charge have none.
   */
  receipt?: ChargeReceipt;
}

/** A charge's refund, kept outside the process that charged (see `Charge.receipt`). */
export interface ChargeReceipt {
  charge_id: string;
  agent_id: string;
  pool: Pool;
  /** The UTC day the call was counted on. */
  day: string;
  free: boolean;
  cost_units: Units;
  /** The charge's spend rows (a paid charge). */
  spend_entries: string[];
}

export interface PoolCounts { callsThisMonth: number; freeUsedInWindow: number }

/** `_svc.usage` less the commons part, and the search pool's counts, as a charge leaves them. */
export interface Figures {
  usage: Omit<UsageSnapshot, 'commons_url' | 'commons_size' | 'commons_contributions'>;
  poolCounts?: PoolCounts;
  /** The balance `usage` shows, in units. */
  balanceUnits: Units;
}

/** A charge made inside the caller's transaction: it commits or rolls back with the caller's write. */
export interface ChargeWithin extends Omit<Charge, 'refund' | 'usage'> {
  /** Call once the caller's transaction has committed: the full `_svc.usage`, and the auto-top-up hook fires. */
  committed(): Promise<UsageSnapshot>;
}

/** What metered routes depend on. */
export interface Metering {
  charge(agentId: string, action: MeteredAction, opts?: ChargeOptions): Promise<Charge>;
  /**
   * Checks and charges inside `trx`, which the caller commits (one commit for its write and the
   * charge; a rollback undoes both, so nothing needs refunding). Locks the agent's account for the
   * rest of `trx`. Throws ApiError to refuse (402 INSUFFICIENT_CREDITS, a 429 quota code). The
   * caller passes the agent's stored tier: looking it up here would need a second connection, which
   * SQLite's single one, held by `trx`, cannot give.
   */
  chargeWithin(trx: Transaction<Database>, agentId: string, action: MeteredAction, opts: Required<ChargeOptions>): Promise<ChargeWithin>;
  /**
   * Would a charge pass now? The same decision as `charge`, made without writing or locking: throws
   * the refusal it would give. A yes may come from the agent's metering state in memory without a
   * read (a copy made stale by another instance can let a call through that the charge then
   * refuses); a no always comes from the database. Not a reservation: a route that checks first,
   * does its work and then charges inside its own transaction (`chargeWithin`) may still be refused
   * at that point.
   */
  check(agentId: string, action: MeteredAction, opts?: ChargeOptions): Promise<void>;
  refund(charge: Charge): Promise<void>;
  /**
   * Gives back the call of a `Charge.receipt` inside the caller's transaction (the account locked for
   * the rest of it). The credit comes back at most once (refund rows are keyed by the spend rows); the
   * count and a free slot do not know whether they were given back already, so the caller makes the
   * refund part of a state change of its own in the same transaction that can happen only once (a
   * parse moving to failed).
   */
  refundReceipt(trx: Transaction<Database>, receipt: ChargeReceipt): Promise<void>;
  usage(agentId: string, opts?: ChargeOptions): Promise<UsageSnapshot>;
  /**
   * Writes the paid calls this instance answered from credit leases (leases.ts) and has not written
   * yet: of one agent, or all. Readers of billing's tables that must see every call call it first.
   */
  settle(agentId?: string): Promise<void>;
  /** Writes what leases answered and gives their holds back (shutdown). */
  close(): Promise<void>;
}

/** Narrow ports: the agent's stored tier (identity) and the commons statistics (commons module, optional). */
export interface AgentTierPort {
  tierOf(agentId: string): Promise<string | undefined>;
  /** Records a new stored tier (identity owns the agent record). */
  setTier?(agentId: string, tier: string): Promise<void>;
}
export interface CommonsStatsPort { stats(agentId: string): Promise<{ size: number; contributions: number }> }

export interface LowBalance { agentId: string; account: Account; balanceUnits: Units; /** The charge that opened the dip. */ chargeId: string }

/** Credit leases (leases.ts): paid calls decided in memory from credit held aside under the lock. */
export interface LeaseOptions {
  /** Paid calls per hold (0: no leases, every call is charged under the lock). */
  calls: number;
  /** How long after a leased call it is settled (written). */
  settleMs?: number;
  /** How long a lease may answer after its last settle. */
  useMs?: number;
  /** How long a hold sets credit aside after its last settle (then another instance may use it). */
  holdMs?: number;
}

export interface MeteringDeps {
  store: BillingStore;
  clock: Clock;
  agents: AgentTierPort;
  upgradeUrl: string;
  commonsUrl?: string;
  commons?: () => CommonsStatsPort | undefined;
  /** Called after commit when a charge took the balance under the auto-top-up threshold (once per dip). */
  onLowBalance?: (e: LowBalance) => void;
  /** Credit leases (leases.ts); absent or `calls: 0`: every charge is decided under the lock. */
  leases?: LeaseOptions;
  log?: (msg: string, err?: unknown) => void;
}
