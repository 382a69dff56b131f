/** Tables of stake, sponsorship and slashing (times are epoch milliseconds; money in units of 0.0001 USD). */

/** A stake: credit locked from the agent's spendable balance (its lot in the ledger has lot_id = stake_id). */
export interface StakesTable {
  stake_id: string;
  agent_id: string;
  tier: string; // low | medium | high
  /** Credit at stake now: what was locked less what slashes took; 0 once ended. */
  units: number;
  status: string; // active | cooling | released | slashed
  staked_at: number;
  /** Unstake is refused before this (30 days after the last lock). */
  locked_until: number;
  /** While cooling: when the credit returns. */
  cooling_until: number | null;
  /** Released (the credit returned) or slashed to nothing. */
  ended_at: number | null;
  released_units: number | null;
  created_log_index: number;
  updated_log_index: number;
}

export interface SponsorshipsTable {
  sponsorship_id: string;
  sponsor_agent_id: string;
  ward_agent_id: string;
  created_at: number;
  created_log_index: number;
  revoke_requested_at: number | null;
  /** The revoke takes effect at this time (7 days after it was asked for). */
  revokes_at: number | null;
  revoke_log_index: number | null;
  /** Part of a sponsorship ring (a cycle): confers nothing. */
  ring_flagged_at: number | null;
  ring_log_index: number | null;
}

export interface SlashesTable {
  slash_id: string;
  agent_id: string;
  harmed_agent_id: string;
  reason: string;
  requested_units: number;
  taken_units: number;
  harmed_units: number;
  insurance_units: number;
  burned_units: number;
  takes: string;
  decided_at: number;
  log_index: number;
}

export interface StakeTables {
  stakes: StakesTable;
  sponsorships: SponsorshipsTable;
  slashes: SlashesTable;
}
