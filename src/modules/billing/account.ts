/**
 * An agent's billing account row: the per-agent lock point of every change to its credit and
 * counters (store.ts locks it, meter-sql.ts holds the compiled lock).
 */
import type { BillingAccountsTable } from '../../infra/db/tables/billing';

export type Account = BillingAccountsTable;
/** A locked account: `meter_stamp` is the fresh stamp this transaction wrote, `prev_stamp` the one it found. */
export interface LockedAccount extends Account { prev_stamp: string | null }

/** The account an agent has before its first billing write. */
export function emptyAccount(agentId: string): Account {
  return {
    agent_id: agentId, lifetime_purchase_units: 0, payment_customer_id: null, payment_method_id: null, recharge_consent_id: null,
    auto_topup_enabled: 0, auto_topup_threshold_units: 0, auto_topup_units: 0, topup_dip_open: 0, topup_intent_id: null,
    meter_stamp: null, meter_prev_stamp: null, created_at: 0, updated_at: 0,
  };
}

/** Numbers as numbers (PostgreSQL returns bigint columns as strings). */
export function normalizeAccount(r: Account): Account {
  return {
    ...r,
    lifetime_purchase_units: Number(r.lifetime_purchase_units),
    auto_topup_threshold_units: Number(r.auto_topup_threshold_units),
    auto_topup_units: Number(r.auto_topup_units),
    auto_topup_enabled: Number(r.auto_topup_enabled),
    topup_dip_open: Number(r.topup_dip_open),
  };
}

/**
 * Accounts of the credit ledger besides an agent's own (its agent id): the credit the agent has at
 * stake, the insurance pool that slashes pay into, and burned credit (stake-ledger.ts).
 */
export const stakeAccount = (agentId: string): string => `stake:${agentId}`;
export const INSURANCE_ACCOUNT = 'pool:insurance';
export const BURNED_ACCOUNT = 'pool:burned';
