/**
 * What the parts of the metering service share (metering.ts puts them together): this instance's
 * compiled statements, its in-memory copies of agents' metering state (meter-state.ts), its credit
 * leases (leases.ts) and the transaction-scope slot of accounts held by a batch (held-account.ts);
 * and the two records a charge passes through: the job submitted and the decision made.
 */
import type { ScopeSlot } from '../../infra/db/trx-scope';
import type { LockedAccount } from './account';
import type { Held } from './held-account';
import type { Lease, Leases } from './leases';
import type { MeterSql } from './meter-sql';
import type { MeterState, MeterStates } from './meter-state';
import type { Charge, Figures, MeteringDeps } from './metering-contract';
import type { MeteredAction } from './pricing';

export interface MeterCore {
  deps: MeteringDeps;
  /** The charge path's compiled statements (meter-sql.ts). */
  m: MeterSql;
  /** Agents' metering state in memory, each valid under the account stamp it was kept under. */
  states: MeterStates;
  /** Credit leases; absent when switched off. */
  leases?: Leases;
  /** Where a transaction scope keeps the accounts its charges hold, by agent. */
  heldSlot: ScopeSlot<Map<string, Held>>;
}

/** One charge to decide. */
export interface Job {
  agentId: string; action: MeteredAction; tier: string; chargeId: string; now: number;
  /** A lease the job's charge took a hold for (leases.ts): answers once the charge is on disk. */
  lease?: Lease;
}

/** A charge as decided under the lock. */
export interface Decided {
  charge: Omit<Charge, 'refund' | 'usage'>;
  usage: Figures['usage'];
  figures: Figures;
  day: string;
  /** The ledger rows of a paid charge (what a refund gives back). */
  spendEntries: string[];
}

/**
 * The state now matches what this transaction wrote (the account's new stamp). If the transaction
 * commits, the next charge finds that stamp and reuses the state; if it rolls back, the stamp reverts
 * and the state is reloaded. Later jobs of the same transaction expect the new stamp.
 */
export function keep(core: MeterCore, agentId: string, state: MeterState, account: LockedAccount): void {
  state.stamp = account.meter_stamp;
  account.prev_stamp = account.meter_stamp;
  core.states.put(agentId, state);
}
