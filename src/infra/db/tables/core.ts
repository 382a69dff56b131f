/** Tables of the identity foundation. Times are epoch milliseconds; booleans are 0/1 integers. */
export interface AgentsTable {
  agent_id: string;
  agent_name: string;
  owner_identifier: string;
  tier: string;
  status: string; // active | suspended
  frozen: number;
  referral_agent: string | null;
  registration_source: string | null;
  agent_card_url: string | null;
  affiliation: string | null;
  created_at: number;
  updated_at: number;
}

export interface PassportsTable {
  agent_id: string;
  public_key_pem: string;
  derivation_method: string; // operator_derived | service_generated
  key_algorithm: string;
  created_at: number;
  revoked_at: number | null;
  bio: string | null;
  skills: string; // JSON array
  listed: number;
  sub_signal_visibility: string; // decomposed | aggregate_only
  self_reported_capabilities: string | null;
  /** Self-declared in the description (directory filters). */
  agent_type: string | null;
  domain: string | null;
}

export interface ApiKeysTable {
  key_hash: string; // sha256 hex of the full token
  agent_id: string;
  kind: string; // root | scoped | session
  scopes: string; // JSON array of capability URIs (scoped keys)
  label: string | null;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
  /** Public id of a scoped key (list, revoke, trust log); null for root keys and session tokens. */
  key_id: string | null;
  /** A session token: the passport key version it was issued under (null: 0, before any rotation). */
  passport_key_version?: number | null;
  /** A session token of an ephemeral passport: that passport's id. */
  ephemeral_passport_id?: string | null;
  /** A delegated key's write_set: JSON array of the tool names it may use (null: not limited to tools). */
  tools?: string | null;
}

export interface PassportChallengesTable {
  challenge_id: string;
  agent_id: string;
  nonce: string;
  issued_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface RecoveryKeysTable {
  agent_id: string;
  public_key_pem: string;
  enrolled_at: number;
}

export interface CovenantsTable {
  covenant_id: string;
  agent_id: string;
  template_id: string;
  params: string; // JSON
  bound_at: number;
  superseded_at: number | null;
  /** The trust log entry that bound it (null until appended, for covenants older than the log). */
  bound_log_index?: number | null;
}

export interface ReferralsTable {
  referred_agent_id: string;
  referrer_agent_id: string;
  status: string; // deferred | excluded | validated | paid
  reason: string | null;
  created_at: number;
  updated_at: number;
}

/** A rotated passport key (projection of the trust log's passport.rotated entries): one row per agent, the latest rotation. */
export interface PassportRotationsTable {
  agent_id: string;
  /** Rotations so far: the version of the key in force (0 before any). */
  key_version: number;
  /** The key the latest rotation replaced: it verifies challenges until grace_until. */
  previous_key_pem: string;
  previous_key_sha256: string;
  /** The key the latest rotation put in force (SHA-256 of its SPKI bytes). */
  current_key_sha256: string;
  rotated_at: number;
  grace_until: number;
  log_index: number;
}

/** A session-scoped ephemeral passport (POST /v1/auth/passport/ephemeral); its session token carries its id. */
export interface EphemeralPassportsTable {
  ephemeral_passport_id: string;
  agent_id: string;
  issued_via: string; // root_key | passport_signature
  created_at: number;
  expires_at: number;
}

export interface CoreTables {
  agents: AgentsTable;
  passports: PassportsTable;
  api_keys: ApiKeysTable;
  passport_challenges: PassportChallengesTable;
  passport_rotations: PassportRotationsTable;
  ephemeral_passports: EphemeralPassportsTable;
  recovery_keys: RecoveryKeysTable;
  covenants: CovenantsTable;
  referrals: ReferralsTable;
}
