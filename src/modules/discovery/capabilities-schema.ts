/**
 * The response schema of GET /v1/capabilities, block by block (capabilities.ts, blocks-*.ts). Objects
 * are closed; maps keyed by a tier, a scope or a template name are records; a block that depends on a
 * route this instance may not serve is Nullable. Open by design: the consolidation params schema (a
 * JSON Schema document quoted as it is).
 */
import { Type, type TSchema } from 'typebox';
import { Nullable } from '../../http/response-schemas';

const S = Type.String();
const I = Type.Integer();
const N = Type.Number();
const B = Type.Boolean();
const Strings = Type.Array(S);
/** A map keyed by tier name (free, spark, ...). */
const ByTier = <T extends TSchema>(t: T) => Type.Record(Type.String(), t, { description: 'Keyed by tier name' });
const StringMap = Type.Record(Type.String(), S);

/** An endpoint as discovery lists it (schema-facts.ts endpointRef). */
export const EndpointRefSchema = Type.Object({
  method: S,
  path: Type.String({ description: 'OpenAPI form, e.g. /v1/memory/{key}' }),
  auth: Type.String({ description: 'none, optional, key, root or admin' }),
  scope: Type.Optional(Type.String({ description: 'What a scoped key needs: a capability URI, or any' })),
  bearer: Type.Optional(Type.Literal('root')),
  summary: S,
});
const Endpoints = Type.Array(EndpointRefSchema);

/** A refusal as the document names it. */
const Refusal = Type.Object({ status: I, error_code: S });

/** min/max/default/pattern of a field, as its route schema states them (schema-facts.ts boundsOf). */
const Bounds = Type.Object({
  minimum: Type.Optional(N),
  maximum: Type.Optional(N),
  minLength: Type.Optional(I),
  maxLength: Type.Optional(I),
  default: Type.Optional(Type.Unknown()),
  pattern: Type.Optional(S),
});
const Range = Type.Object({ minimum: I, maximum: I, default: I });

/** How a signed amend is made (blocks-trust.ts signedAmend). */
const signedAmend = { amend_scheme: S, challenge: S, signed_bytes: S, signature: S };

const Authentication = Type.Object({
  header: S,
  scheme: S,
  api_key_prefix: S,
  session_token_prefix: S,
  session_token_lifetime_seconds: I,
  register_url: S,
  missing_or_invalid: Refusal,
  root_key_required: Type.Object({ status: I, error_code: S, endpoints: Strings }),
  scoped_keys: Type.Object({
    scopes: Strings,
    manage: Type.Object({ create: S, list: S, revoke: S, auth: S }),
    create_body: Type.Object({ scopes: S, label: S, expires_in: S }),
    max_active_per_agent: I,
    limit_error: Refusal,
    key_shown: S,
    outside_scopes: Type.Object({ status: I, error_code: S, fields: Strings }),
    revoked_or_expired: Refusal,
    endpoints_by_scope: Type.Record(Type.String(), Strings, { description: 'Keyed by scope' }),
    any_key_endpoints: Strings,
    refused_endpoints: Strings,
  }),
  public_endpoints: Strings,
  optional_bearer_endpoints: Strings,
  admin: Type.Object({ header: S, endpoints: Strings }),
  passport_session_exchange: Type.Object({ scheme: S, steps: Strings, endpoints: Endpoints }),
});

const RateLimits = Type.Object({
  memory_requests_per_minute: Nullable(I, { description: 'null: no limit on this instance' }),
  memory_rate_limit_error: Type.Object({ status: I, error_code: S, header: S }),
  parse_per_minute_by_tier: ByTier(I),
  parse_rate_limit_error: Refusal,
});

const BillingTier = Type.Object({
  name: S,
  label: S,
  metering: Type.Union([Type.Literal('credits'), Type.Literal('monthly')]),
  search_calls_per_month: Nullable(I),
  browse_calls_per_month: Nullable(I),
  free_calls_per_30_days: Nullable(Type.Object({ search: Nullable(I), browse: Nullable(I), memory_write: Nullable(I) })),
  memory_writes_per_month: Nullable(I),
  memory_storage_bytes: I,
  blob_storage_bytes: I,
  search_overage_usd_per_call: Nullable(S),
  feedback_per_month: I,
  approval_events_per_month: I,
  parse_ops_per_month: I,
  parse_per_minute: I,
  min_lifetime_purchase_usd: Nullable(S),
});

const CredibilityScoring = Type.Object({
  field: S,
  range: Type.Array(N),
  rules: Type.Array(Type.Object({ match: S, score: N })),
  news_domains: Strings,
});

const WebSearch = Type.Object({
  available: B,
  primary_provider: Nullable(S),
  fallback_provider: Nullable(S),
  unavailable_reason: Nullable(S),
  unavailable_error: Nullable(Refusal),
  endpoints: Endpoints,
});

const Feedback = Type.Object({
  ref_types: Nullable(Strings),
  signals: Nullable(Strings),
  note: Type.Object({ max_characters: I, counted_in: S, nullable: B }),
  per_utc_month_by_tier: ByTier(I),
  endpoints: Endpoints,
});

const Browser = Type.Object({
  modes: Strings,
  dynamic_mode_configured: B,
  dynamic_mode_unavailable_reason: Nullable(S),
  robots_txt: S,
  public_web_only: B,
  max_response_bytes: I,
  timeout_ms: I,
  render_timeout_ms: I,
  allowed_ports: Type.Array(I),
  not_supported: Strings,
  endpoints: Endpoints,
});

const Passport = Type.Object({
  did_scheme: S,
  key_algorithm: S,
  suite: S,
  verified_capability_uris: Strings,
  trust_levels: Strings,
  trust_level_rules: StringMap,
  verified_capabilities_rule: S,
  scoped_keys: Type.Object({ endpoints: Endpoints, outside_scopes_error: Refusal }),
  challenge_scheme: S,
  rotation_grace_seconds: I,
  rotation: Nullable(Type.Object({
    endpoint: S, auth: S, body: Type.Object({ public_key: S, challenge_id: S, signature: S }), grace: S, trust_log_kind: S,
  })),
  ephemeral_passports: Nullable(Type.Object({
    endpoint: S, auth: S, lifetime_seconds: Range, trust_level: S, gives: S, max_active_per_agent: I,
  })),
  private_key_policy: S,
  endpoints: Endpoints,
});

const Covenant = Type.Object({
  templates: Strings,
  template_params: StringMap,
  template_tiers: StringMap,
  activation: Type.Object({ active: Strings, stored_without_activation: Strings }),
  downgrade_rule: S,
  amend_forbidden_while: Strings,
  ...signedAmend,
  amend_signature_required_for: S,
  enrolment_grace_hours: I,
  legacy_enrolment_open_until: S,
  public_read: S,
  endpoints: Endpoints,
});

const MemoryLedger = Type.Object({
  model: S,
  public_version_listing: B,
  versions: Type.Object({ etag: S, if_match: S, conflict_error: Refusal }),
  unavailable_error: Type.Object({ status: I, error_code: S, when: S }),
  key: Nullable(Bounds),
  max_value_bytes: I,
  max_ttl_seconds: I,
  importance: Nullable(Strings),
  derived_from: Nullable(S),
  content_trust: S,
  write_quota_per_month_by_tier: ByTier(Nullable(I)),
  storage_bytes_by_tier: ByTier(I),
  endpoints: Endpoints,
});

const ConsolidationPolicy = Type.Object({
  template_id: S,
  params: Strings,
  params_schema: Type.Object({}, { additionalProperties: true, description: 'The JSON Schema of params (open by design: a schema document)' }),
  params_rules: Strings,
  ...signedAmend,
  amend_forbidden_when: S,
  engine: S,
  trust_log_kind: S,
  endpoints: Endpoints,
});

const PolicyBindings = Type.Object({
  binding_types: Strings,
  max_allowed_tools: I,
  tool_name_pattern: S,
  ...signedAmend,
  enforced_at: S,
  integrity: S,
  delegation: Nullable(Type.Object({
    who: S, write_set: S, key: S, expires_in_seconds: Range, counts_towards: S, trust_log_kinds: Strings,
  })),
  trust_log_kind: S,
  endpoints: Endpoints,
});

const Recovery = Type.Object({
  intent_scheme: S,
  initiate_scheme: S,
  complete_scheme: S,
  veto_scheme: S,
  challenge: S,
  proofs: StringMap,
  veto_window_days: I,
  completion_window_days: I,
  enrolment_grace_hours: I,
  staged_resurrection_days: I,
  staged_resurrection_restricts: Strings,
  rate_limits: Type.Object({ calls_per_address_per_minute: I, calls_per_agent_per_hour: I, channel_codes_per_agent_per_hour: I }),
  custody: S,
  custody_transfer: Type.Object({ scheme: S, rule: S }),
  endpoints: Endpoints,
});

const Journal = Type.Object({
  commitment: S,
  commitment_hash: Nullable(Bounds),
  label: S,
  attestation: Type.Object({ fields: Type.Object({ source: Strings, client: S }) }),
  attestation_sources: Strings,
  stored: S,
  duplicates: S,
  proof: S,
  endpoints: Endpoints,
});

const Dispute = Type.Object({
  who: S,
  per_agent_per_utc_day: I,
  one_dispute_per_event: B,
  outcomes: Type.Object({ upheld: S, dismissed: S }),
  ledger: S,
  endpoints: Endpoints,
});

const Trust = Type.Object({
  reputation_model: Type.Object({
    scoring_model: S,
    prior_alpha: N,
    prior_beta: N,
    half_life_days: N,
    legacy_sub_signal_decay_days: N,
    sub_signal_minimum_interactions: I,
    rejected_beta_share: N,
    rater_weight: Type.Object({ staked_sponsored_or_established: N, other: N }),
    outcomes: Strings,
    sub_signal_categories: Strings,
    interaction_ref_types: Strings,
    ratings_per_rater_per_utc_day: I,
    epochs: S,
  }),
  log: Type.Object({
    structure: S,
    checkpoint_format: S,
    origin: Type.Optional(S),
    verifier_key: Type.Optional(S),
    public_key: Type.Optional(S),
    endpoints: Endpoints,
  }),
  stake_tiers_credits: Type.Record(Type.String(), I, { description: 'Keyed by stake tier' }),
  stake_credit: S,
  stake_lock_days: I,
  unstake_cooling_days: I,
  sponsorship: Type.Object({ max_active_wards: I, revoke_grace_days: I, shared_slash_share: N, sponsor_must_be_staked: B, rings: S }),
  slash_split: Type.Object({ harmed: N, insurance: N, burn: N, remainder: S, sponsor_share_rounding: S }),
  tool_passports: Nullable(Type.Object({
    did_scheme: S, risk_classes: Strings, declared_not_verified: Strings, key: S, max_active_per_agent: I, trust_log_kinds: Strings,
  })),
  endpoints: Endpoints,
});

const Directory = Type.Object({
  served: B,
  opt_in: S,
  page_limit: Bounds,
  filters: Type.Object({ agent_type: Nullable(S), domain: Nullable(S), bridge_only: S }),
  order: S,
  pagination: Type.Object({
    cursor: S,
    lifetime_seconds: I,
    invalid_cursor: Type.Object({ status: I, error_code: S, reasons: Strings }),
  }),
  rank_refresh_seconds: I,
  row_fields: Strings,
  synthetic_profiles: S,
  never_shown: Strings,
  paid_placement: B,
  endpoints: Endpoints,
});

const Commons = Type.Object({ description: S, endpoints: Endpoints });

const Pricing = Type.Object({
  model: S,
  currency: S,
  credit_usd: S,
  free_floors: Nullable(Type.Object({ window: S, memory_write: I, search: I, browse: I }), { description: 'null: metering is off on this instance' }),
  price_credits: Type.Record(Type.String(), I, { description: 'Credits per metered action' }),
  free_forever: Strings,
  purchased_credit_expires: B,
  credit_slider: Type.Object({
    min_credits: I,
    max_credits: I,
    rounding: S,
    bands: Type.Array(Type.Object({ min_credits: I, max_credits: Nullable(I), unit_rate_usd: S })),
  }),
  metering_enabled: B,
  metering_note: Type.Optional(S),
  credit_purchase: S,
  credit_tiers: Type.Array(Type.Object({ tier: S, from_lifetime_purchases_usd: S })),
  billing_config_url: Nullable(S),
  endpoints: Endpoints,
});

const ReferralRewards = Type.Object({
  how: S,
  referral_field: S,
  register_url: S,
  register_endpoint: Nullable(EndpointRefSchema),
  payouts_enabled: B,
  reward_usd_per_validated_signup: S,
  activity_window_days: I,
  min_metered_calls_in_window: I,
  referrer_min_age_utc_days: I,
  reward_credit_expires_after_days: Nullable(I),
  max_payouts_per_referrer_per_utc_day: I,
  max_payouts_network_per_utc_day: I,
  exclusions: Strings,
  your_referral_code: Type.Optional(Type.String({ description: 'With a Bearer: the caller\'s own code (its agent_id)' })),
});

const DocumentStorage = Type.Object({
  blob_id_format: S,
  max_blob_bytes: I,
  storage_bytes_by_tier: ByTier(I),
  parse_types: Strings,
  parse_sync_max_bytes: I,
  parse_async_enabled: B,
  callback_replay_enabled: B,
  signed_url_seconds: Type.Object({ default: I, max: I }),
  soft_delete_grace_seconds: I,
  parse_ops_per_month_by_tier: ByTier(I),
  blob_search: S,
  endpoints: Endpoints,
});

const Mcp = Type.Object({
  endpoint: S,
  transport: S,
  authentication: S,
  manifest_url: Nullable(S),
  tool_definitions_base: S,
  legacy_alias: Type.Object({ base: S, header: S }),
  tools: Type.Array(Type.Object({ id: S, name: S, url: S, served: B })),
});

export const CapabilitiesSchema = Type.Object({
  status: Type.Literal('success'),
  version: S,
  base_url: S,
  endpoints: Type.Array(EndpointRefSchema, { description: 'Every route of this instance' }),
  authentication: Authentication,
  rate_limits: RateLimits,
  billing_tiers: Type.Array(BillingTier),
  credibility_scoring: CredibilityScoring,
  web_search: WebSearch,
  feedback: Feedback,
  browser: Browser,
  passport: Passport,
  covenant: Covenant,
  memory_ledger: MemoryLedger,
  consolidation_policy: ConsolidationPolicy,
  policy_bindings: PolicyBindings,
  recovery: Recovery,
  journal: Journal,
  dispute: Dispute,
  trust: Trust,
  directory: Directory,
  commons: Commons,
  pricing: Pricing,
  tier_descriptions: ByTier(S),
  referral_rewards: ReferralRewards,
  document_storage: DocumentStorage,
  mcp: Mcp,
}, { title: 'Capabilities' });
