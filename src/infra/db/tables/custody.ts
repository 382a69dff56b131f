/** Tables of the custody module (times are epoch milliseconds). Covenants and recovery keys are in core.ts. */

/** Projection: a recovery intent (entries recovery.intent.opened / .vetoed, recovery.initiated, recovery.completed). */
export interface RecoveryIntentsTable {
  intent_id: string;
  agent_id: string;
  /** The custody epoch the intent would close. */
  epoch: number;
  /** recovery_key | channel: the covenant it was proved through. */
  tier: string;
  new_public_key_pem: string;
  new_public_key_sha256: string;
  /** open | vetoed | initiated | completed (lapsed is read from lapses_at). */
  status: string;
  opened_at: number;
  veto_deadline: number;
  lapses_at: number;
  opened_log_index: number;
  vetoed_at: number | null;
  initiated_at: number | null;
  completed_at: number | null;
  /** The entry that vetoed or completed it. */
  closed_log_index: number | null;
  /** A completed channel recovery: the end of the staged resurrection. */
  staged_until: number | null;
}

/** HMAC key of a channel covenant's deliveries (shown once, when the covenant is bound). */
export interface CovenantChannelSecretsTable { covenant_id: string; agent_id: string; secret: string; created_at: number }

/** A single-use code delivered through a channel covenant; only its SHA-256 is kept. */
export interface RecoveryChannelCodesTable {
  code_id: string;
  agent_id: string;
  binding_sha256: string;
  code_sha256: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

/** A custody transfer awaiting the outgoing custodian's signature. */
export interface CustodyTransfersTable {
  transfer_id: string;
  agent_id: string;
  epoch: number;
  challenge_id: string;
  incoming_public_key_pem: string;
  incoming_owner_identifier: string;
  created_at: number;
  expires_at: number;
  completed_at: number | null;
}

export interface CustodyTables {
  recovery_intents: RecoveryIntentsTable;
  covenant_channel_secrets: CovenantChannelSecretsTable;
  recovery_channel_codes: RecoveryChannelCodesTable;
  custody_transfers: CustodyTransfersTable;
}
