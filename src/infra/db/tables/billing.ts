/** Tables of the billing area (times are epoch milliseconds; booleans 0/1; money in units of 0.0001 USD). */

/** One row per agent that has touched billing: the lock point that serialises its charges. */
export interface BillingAccountsTable {
  agent_id: string;
  lifetime_purchase_units: number;
  payment_customer_id: string | null;
  payment_method_id: string | null;
  recharge_consent_id: string | null;
  auto_topup_enabled: number;
  auto_topup_threshold_units: number;
  auto_topup_units: number;
  /** 1 while the balance is in a dip for which the one off-session charge was already made. */
  topup_dip_open: number;
  topup_intent_id: string | null;
  /** Rewritten by every transaction that locks the account: validates in-memory metering state (metering.ts). */
  meter_stamp: string | null;
  /** The stamp the last locking transaction replaced (returned by the same UPDATE). */
  meter_prev_stamp: string | null;
  created_at: number;
  updated_at: number;
}

/** Append-only: grants, purchases, spends, refunds. Never updated, never deleted. */
export interface CreditLedgerTable {
  entry_id: string;
  agent_id: string;
  kind: string; // grant | purchase | spend | refund
  amount_units: number; // signed: spends negative
  /** grant/purchase: its own entry_id; spend/refund: the lot drawn from or returned to. */
  lot_id: string;
  expires_at: number | null;
  action: string | null;
  charge_id: string | null;
  /** Idempotency reference (payment intent, referral, refund of an entry); unique when set. */
  ref: string | null;
  created_at: number;
}

/** Projection of the ledger: what is left of each grant/purchase. Rebuildable from credit_ledger. */
export interface CreditLotsTable {
  lot_id: string;
  agent_id: string;
  kind: string;
  expires_at: number | null;
  remaining_units: number;
  created_at: number;
}

/**
 * Free-floor slots: an agent has `floor` slots per pool; a call is free when a slot's last use is at
 * least 30 days old. Equivalent to "at most floor free calls in any rolling 30-day window".
 */
export interface MeteringFreeSlotsTable {
  agent_id: string;
  pool: string;
  slot: number;
  used_at: number;
  charge_id: string | null;
}

/** Calls per agent, pool and UTC day (monthly quotas, usage history, referral activity). */
export interface MeteringDailyTable {
  agent_id: string;
  pool: string;
  day: string; // YYYY-MM-DD (UTC)
  count: number;
}

/**
 * Credit set aside for one instance's in-memory decisions (billing/leases.ts): `units` not yet spent
 * by settled calls; none once `expires_at` has passed.
 */
export interface MeteringHoldsTable {
  agent_id: string;
  hold_id: string;
  pool: string;
  units: number;
  expires_at: number;
  created_at: number;
}

export interface BillingWebhookEventsTable {
  event_id: string;
  type: string;
  received_at: number;
}

export interface ReferralPayoutsTable {
  referred_agent_id: string;
  referrer_agent_id: string;
  status: string; // paid | rejected
  reason: string | null;
  amount_units: number;
  day: string; // UTC day of the decision
  decided_at: number;
}

export interface BillingTables {
  billing_accounts: BillingAccountsTable;
  credit_ledger: CreditLedgerTable;
  credit_lots: CreditLotsTable;
  metering_free_slots: MeteringFreeSlotsTable;
  metering_daily: MeteringDailyTable;
  metering_holds: MeteringHoldsTable;
  billing_webhook_events: BillingWebhookEventsTable;
  referral_payouts: ReferralPayoutsTable;
}
