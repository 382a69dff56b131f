/** Tables of the declarations (projections of the trust log; times are epoch milliseconds). */

/** One consolidation policy declaration; the current one has superseded_at null. `params` is canonical JSON (RFC 8785). */
export interface ConsolidationPoliciesTable {
  agent_id: string;
  version: number;
  template_id: string;
  params: string;
  declared_at: number;
  log_index: number;
  superseded_at: number | null;
}

/** One policy binding; the current one per (agent, binding_type) has superseded_at null. `params` is canonical JSON (RFC 8785). */
export interface PolicyBindingsTable {
  agent_id: string;
  binding_type: string;
  version: number;
  params: string;
  bound_at: number;
  log_index: number;
  superseded_at: number | null;
}

export interface JournalCommitmentsTable {
  commitment_id: string;
  agent_id: string;
  /** Standard base64 of the 32 bytes. */
  commitment_hash: string;
  attestation_source: string | null;
  attestation_client: string | null;
  epoch: number;
  committed_at: number;
  log_index: number;
}

export interface ToolPassportsTable {
  tool_id: string;
  agent_id: string;
  name: string;
  description: string;
  public_key_pem: string | null;
  /** 1 at registration, +1 at each rotation. */
  key_version: number;
  risk_class: string;
  model_provenance_hash: string | null;
  model_provenance_label: string | null;
  created_at: number;
  created_log_index: number;
  rotated_at: number | null;
  rotated_log_index: number | null;
  revoked_at: number | null;
  revoked_log_index: number | null;
}

/** A scoped key issued by delegation (its key row is in api_keys, with `tools` = the write_set). */
export interface DelegationsTable {
  key_id: string;
  parent_agent_id: string;
  /** JSON array of tool names. */
  write_set: string;
  /** JSON array of the capability URIs the write_set implies. */
  scopes: string;
  label: string | null;
  expires_at: number;
  created_at: number;
  log_index: number;
  /** The policy binding (tool_allow_list) the write_set was checked against; null without one. */
  binding_log_index: number | null;
}

export interface DeclarationsTables {
  consolidation_policies: ConsolidationPoliciesTable;
  policy_bindings: PolicyBindingsTable;
  journal_commitments: JournalCommitmentsTable;
  tool_passports: ToolPassportsTable;
  delegations: DelegationsTable;
}
