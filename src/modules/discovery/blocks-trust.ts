/**
 * Capabilities blocks of the trust layer: passport, covenant, consolidation policy, policy
 * bindings, recovery, journal, dispute, trust and directory. Constants quoted here are fixed by the
 * API contract (trust and referral limits, signature schemes); the
 * endpoint lists come from the live route table, so a block lists only what this instance serves.
 */
import { ALL_CAPABILITIES } from '../identity/passport-view';
import {
  CONSOLIDATION_AMEND_SCHEME, COVENANT_AMEND_SCHEME, CUSTODY_TRANSFER_SCHEME, PASSPORT_CHALLENGE_SCHEME, POLICY_BINDING_AMEND_SCHEME, RECOVERY_COMPLETE_SCHEME,
  RECOVERY_INITIATE_SCHEME, RECOVERY_INTENT_SCHEME, RECOVERY_VETO_SCHEME,
} from '../../lib/signing';
import {
  ACTIVE_TEMPLATES, COMPLETION_WINDOW_DAYS, ENROLMENT_GRACE_HOURS, LEGACY_ENROL_CLOSES_AT, STAGED_RESURRECTION_DAYS, TEMPLATE_PARAMS, TEMPLATE_TIER, TEMPLATES,
  VETO_WINDOW_DAYS,
} from '../custody/model';
import { STAGED_RESTRICTIONS } from '../custody/restrictions';
import { CONSOLIDATION_TEMPLATE_ID, consolidationParamsJsonSchema } from '../declarations/consolidation-params';
import { DELEGATION_DEFAULT_EXPIRES_IN, DELEGATION_EXPIRES_MAX, DELEGATION_EXPIRES_MIN, WRITE_SET_MAX } from '../declarations/delegation';
import { ATTESTATION_CLIENT_MAX, ATTESTATION_SOURCES, JOURNAL_LABEL } from '../declarations/journal';
import { BINDING_TYPES, MAX_ALLOWED_TOOLS, TOOL_NAME_PATTERN } from '../declarations/policies';
import { MAX_ACTIVE_TOOLS, RISK_CLASSES } from '../declarations/tools';
import { MAX_ACTIVE_EPHEMERAL_PASSPORTS, ROTATION_GRACE_SECONDS } from '../identity/passport-lifecycle';
import { EPHEMERAL_TTL_MAX, EPHEMERAL_TTL_MIN } from '../identity/schemas';
import {
  CATEGORIES, CHEAP_RATER_WEIGHT, DISPUTES_PER_DAY, FULL_RATER_WEIGHT, HALF_LIFE_DAYS, MIN_INTERACTIONS, OUTCOMES, PRIOR_ALPHA, PRIOR_BETA, REJECTED_BETA_SHARE,
  SUB_SIGNAL_DECAY_DAYS,
} from '../reputation/model';
import { INTERACTION_REF_TYPES } from '../reputation/schemas';
import { TRUST_LEVEL_RULES, TRUST_LEVELS } from '../trust/levels';
import type { BlockContext } from './blocks-core';
import { boundsOf, endpointsMatching, fieldSchema } from './schema-facts';
import { MAX_ACTIVE_WARDS, SLASH_SPLIT, SPONSOR_REVOKE_GRACE_DAYS, SPONSOR_SLASH_SHARE, STAKE_LOCK_DAYS, STAKE_TIER_CREDITS, UNSTAKE_COOLING_DAYS } from '../stake/rules';


export function passportBlock({ table }: BlockContext) {
  return {
    did_scheme: 'did:svc:<agent_id>',
    key_algorithm: 'ed25519',
    suite: 'ed25519',
    verified_capability_uris: [...ALL_CAPABILITIES],
    trust_levels: [...TRUST_LEVELS],
    trust_level_rules: TRUST_LEVEL_RULES,
    verified_capabilities_rule: 'the scopes of the agent\'s active scoped keys plus its tier\'s capabilities (svc:commons-publish needs a paying tier); none once the passport is revoked',
    scoped_keys: { endpoints: endpointsMatching(table, /^\/v1\/me\/keys/), outside_scopes_error: { status: 403, error_code: 'SCOPE_NOT_GRANTED' } },
    challenge_scheme: PASSPORT_CHALLENGE_SCHEME,
    rotation_grace_seconds: ROTATION_GRACE_SECONDS,
    rotation: table.find('POST', '/v1/me/passport/rotate') ? {
      endpoint: 'POST /v1/me/passport/rotate', auth: 'root key',
      body: { public_key: 'the new key: PEM SPKI or base64 of the raw 32 bytes', challenge_id: 'a fresh challenge of the agent', signature: 'the NEW key\'s signature over the challenge\'s sign_payload (proof of possession)' },
      grace: `the replaced key verifies challenges for ${ROTATION_GRACE_SECONDS} s more, then never; session tokens issued under it end with it; a second rotation ends the grace of the key before`,
      trust_log_kind: 'passport.rotated',
    } : null,
    ephemeral_passports: table.find('POST', '/v1/auth/passport/ephemeral') ? {
      endpoint: 'POST /v1/auth/passport/ephemeral',
      auth: 'the root key as Bearer, or no Bearer and agent_id + challenge_id + signature (the passport key over the challenge\'s sign_payload)',
      lifetime_seconds: { minimum: EPHEMERAL_TTL_MIN, maximum: EPHEMERAL_TTL_MAX, default: EPHEMERAL_TTL_MAX },
      trust_level: 'ephemeral',
      gives: 'its own ephemeral_passport_id and a svc_session_ token bound to it',
      max_active_per_agent: MAX_ACTIVE_EPHEMERAL_PASSPORTS,
    } : null,
    private_key_policy: 'never stored; returned once at registration only when svc generated the keypair',
    endpoints: endpointsMatching(table, /^\/v1\/(agents\/\{agent_id\}\/passport|agents\/passport|me\/passport|auth\/passport)/),
  };
}

export function covenantBlock({ table }: BlockContext) {
  return {
    templates: [...TEMPLATES],
    template_params: TEMPLATE_PARAMS,
    template_tiers: TEMPLATE_TIER,
    activation: { active: [...ACTIVE_TEMPLATES], stored_without_activation: TEMPLATES.filter((x) => !ACTIVE_TEMPLATES.includes(x)) },
    downgrade_rule: 'a covenant of the strong tier may not be amended to one of the weak tier (COVENANT_DOWNGRADE_FORBIDDEN)',
    amend_forbidden_while: ['a recovery intent is open', 'staged resurrection'],
    ...signedAmend(COVENANT_AMEND_SCHEME, '{template_id, params}'),
    amend_signature_required_for: 'high-authority agents: staked, sponsoring or established (PASSPORT_SIGNATURE_REQUIRED); a signature given by any agent is verified',
    enrolment_grace_hours: ENROLMENT_GRACE_HOURS,
    legacy_enrolment_open_until: LEGACY_ENROL_CLOSES_AT,
    public_read: 'template and params; a recovery key by SHA-256, a channel by host and URL SHA-256',
    endpoints: endpointsMatching(table, /covenant/),
  };
}

/** How a signed amend is made (the bytes: docs/trust.md, "Signed requests"). */
const signedAmend = (scheme: string, content: string) => ({
  amend_scheme: scheme,
  challenge: 'POST /v1/auth/passport/challenge {agent_id}: challenge_id and challenge_nonce (single use)',
  signed_bytes: `UTF-8 lines joined by LF: ${scheme}, agent_id:<agent id>, challenge_id:<challenge_id>, nonce:<challenge_nonce>, content_sha256:<hex SHA-256 of the RFC 8785 (JCS) bytes of ${content}>`,
  signature: 'passport_signature: base64 of the raw Ed25519 signature by the passport key',
});

export function consolidationPolicyBlock({ table }: BlockContext) {
  return {
    template_id: CONSOLIDATION_TEMPLATE_ID,
    params: ['schema_version', 'compression', 'weighting', 'fade_rules', 'declared_at'],
    params_schema: consolidationParamsJsonSchema(),
    params_rules: [
      'weighting: the four weights sum to 1',
      'compression.target_ratio is 1 when compression.strategy is none',
      'fade_rules: at most one rule per (importance, action); for one importance, compress < archive < forget in after_days',
      'declared_at is set by svc when the amend is recorded (params that carry it are refused)',
    ],
    ...signedAmend(CONSOLIDATION_AMEND_SCHEME, '{template_id, params}'),
    amend_forbidden_when: 'the agent is frozen, or (custody) a recovery intent is open or the agent is in staged resurrection',
    engine: 'none: the policy is recorded only',
    trust_log_kind: 'consolidation.amended',
    endpoints: endpointsMatching(table, /consolidation-policy/),
  };
}

export function policyBindingsBlock({ table }: BlockContext) {
  return {
    binding_types: [...BINDING_TYPES],
    max_allowed_tools: MAX_ALLOWED_TOOLS,
    tool_name_pattern: TOOL_NAME_PATTERN,
    ...signedAmend(POLICY_BINDING_AMEND_SCHEME, '{binding_type, params}'),
    enforced_at: 'POST /v1/agents/{parent_agent_id}/delegate (POLICY_BINDING_WRITE_SET_EXCEEDED)',
    integrity: 'each read and each delegation checks the stored binding against the hash its trust log entry recorded (POLICY_BINDING_CORRUPT)',
    delegation: table.find('POST', '/v1/agents/{parent_agent_id}/delegate') ? {
      who: 'the parent itself: its root key or a passport session (scoped keys cannot delegate)',
      write_set: `1 to ${WRITE_SET_MAX} svc tool names (MCP names, e.g. svc_memory)`,
      key: 'a scoped key holding the capability scopes of the write_set\'s routes; every route of another tool is refused (403 SCOPE_NOT_GRANTED with required_tools), over HTTP and MCP',
      expires_in_seconds: { minimum: DELEGATION_EXPIRES_MIN, maximum: DELEGATION_EXPIRES_MAX, default: DELEGATION_DEFAULT_EXPIRES_IN },
      counts_towards: 'the parent\'s 50 active scoped keys (listed and revoked at /v1/me/keys)',
      trust_log_kinds: ['key.created', 'delegation.issued'],
    } : null,
    trust_log_kind: 'policy_binding.amended',
    endpoints: endpointsMatching(table, /policy-bindings|\/delegate$/),
  };
}

export function recoveryBlock({ table, config }: BlockContext) {
  return {
    intent_scheme: RECOVERY_INTENT_SCHEME,
    initiate_scheme: RECOVERY_INITIATE_SCHEME,
    complete_scheme: RECOVERY_COMPLETE_SCHEME,
    veto_scheme: RECOVERY_VETO_SCHEME,
    challenge: 'POST /v1/auth/passport/challenge {agent_id, purpose: "recovery"} (given also for a revoked passport)',
    proofs: {
      'owner-recovery-key': 'every step signed by the recovery key over a fresh challenge; the completion co-signed by the new passport key',
      channel: 'the intent proved by a single-use code svc delivers to the covenant\'s HTTPS URL (header svc-signature: HMAC-SHA256 with the covenant\'s secret); initiate and complete signed by the new passport key the intent names',
    },
    veto_window_days: VETO_WINDOW_DAYS,
    completion_window_days: COMPLETION_WINDOW_DAYS,
    enrolment_grace_hours: ENROLMENT_GRACE_HOURS,
    staged_resurrection_days: STAGED_RESURRECTION_DAYS,
    staged_resurrection_restricts: [...STAGED_RESTRICTIONS],
    rate_limits: {
      calls_per_address_per_minute: config.trust.recoveryPerAddressPerMinute,
      calls_per_agent_per_hour: config.trust.recoveryPerAgentPerHour,
      channel_codes_per_agent_per_hour: config.trust.recoveryChannelCodesPerHour,
    },
    custody: 'completion closes the custody epoch and opens a new one (a rebirth, not a silent key rotation): every earlier key is revoked, a new root key is returned once, the passport key becomes the intent\'s',
    custody_transfer: {
      scheme: CUSTODY_TRANSFER_SCHEME,
      rule: 'the current passport signs the transfer bytes the intent returns; a new custody epoch opens for the incoming custodian, whose reputation starts fresh; the outgoing covenant ends',
    },
    endpoints: endpointsMatching(table, /recovery|custody/),
  };
}

export function journalBlock({ table }: BlockContext) {
  const hash = fieldSchema(table, 'POST', '/v1/me/journal/commit', 'body', 'commitment_hash');
  return {
    commitment: 'base64 of exactly 32 bytes: SHA-256 over "svc:sealed-journal:v1\\n" + agent id + "\\n" + your local material, computed on the client',
    commitment_hash: boundsOf(hash) ?? null,
    label: JOURNAL_LABEL,
    attestation: { fields: { source: [...ATTESTATION_SOURCES], client: `optional, 1 to ${ATTESTATION_CLIENT_MAX} characters (self-declared)` } },
    attestation_sources: [...ATTESTATION_SOURCES],
    stored: 'digest only: a body carrying anything but commitment_hash and commit_attestation is refused (JOURNAL_PREIMAGE_FORBIDDEN)',
    duplicates: 'one commitment per (agent, digest): JOURNAL_COMMITMENT_DUPLICATE',
    proof: 'each commitment is a trust log entry (kind journal.committed); its log_index and GET /v1/trust/log/proof/inclusion prove when it was committed',
    endpoints: endpointsMatching(table, /journal/),
  };
}

export function disputeBlock({ table }: BlockContext) {
  return {
    who: 'the subject of the cited reputation event',
    per_agent_per_utc_day: DISPUTES_PER_DAY,
    one_dispute_per_event: true,
    outcomes: { upheld: 'event weight becomes zero', dismissed: 'event unchanged' },
    ledger: 'append-only; a decision adds a counter-entry',
    endpoints: endpointsMatching(table, /dispute/),
  };
}

export function trustBlock({ table, config, trustLog }: BlockContext) {
  return {
    reputation_model: {
      scoring_model: 'beta_v1', prior_alpha: PRIOR_ALPHA, prior_beta: PRIOR_BETA, half_life_days: HALF_LIFE_DAYS, legacy_sub_signal_decay_days: SUB_SIGNAL_DECAY_DAYS,
      sub_signal_minimum_interactions: MIN_INTERACTIONS,
      rejected_beta_share: REJECTED_BETA_SHARE,
      rater_weight: { staked_sponsored_or_established: FULL_RATER_WEIGHT, other: CHEAP_RATER_WEIGHT },
      outcomes: [...OUTCOMES],
      sub_signal_categories: [...CATEGORIES],
      interaction_ref_types: [...INTERACTION_REF_TYPES],
      ratings_per_rater_per_utc_day: config.trust.ratingsPerDay,
      epochs: 'reputation counts the current custody epoch only; prior epochs stay readable and never carry over',
    },
    log: {
      structure: 'RFC 9162 Merkle tree (SHA-256) over RFC 8785 canonical JSON entries; one entry per trust fact',
      checkpoint_format: 'C2SP tlog-checkpoint in a C2SP signed note (Ed25519)',
      ...(trustLog ?? {}),
      endpoints: endpointsMatching(table, /trust\/log|svc-trust-log/),
    },
    stake_tiers_credits: { ...STAKE_TIER_CREDITS },
    stake_credit: 'credit that never expires (purchases, grants without an expiry), not held for calls in flight; free floors are not credit',
    stake_lock_days: STAKE_LOCK_DAYS,
    unstake_cooling_days: UNSTAKE_COOLING_DAYS,
    sponsorship: {
      max_active_wards: MAX_ACTIVE_WARDS, revoke_grace_days: SPONSOR_REVOKE_GRACE_DAYS, shared_slash_share: SPONSOR_SLASH_SHARE,
      sponsor_must_be_staked: true, rings: 'every sponsorship on a cycle is flagged when it closes and confers nothing',
    },
    slash_split: { ...SLASH_SPLIT, remainder: 'burned', sponsor_share_rounding: 'down to the unit (0.0001 USD)' },
    tool_passports: table.find('POST', '/v1/me/tools') ? {
      did_scheme: 'did:svc:tool:<tool_id>',
      risk_classes: [...RISK_CLASSES],
      declared_not_verified: ['risk_class', 'model_provenance_hash', 'model_provenance_label'],
      key: 'optional Ed25519 public key (PEM SPKI or base64 of the raw 32 bytes); rotate replaces it, revoke ends the passport; svc never sees a private key',
      max_active_per_agent: MAX_ACTIVE_TOOLS,
      trust_log_kinds: ['tool.registered', 'tool.rotated', 'tool.revoked'],
    } : null,
    endpoints: endpointsMatching(table, /(vouch|stake|sponsor|reputation|interaction|\/v1\/tools|\/v1\/me\/tools|approval-events)/),
  };
}

export function directoryBlock({ table, config }: BlockContext) {
  const served = table.find('GET', '/v1/agents') !== undefined;
  const field = (name: string) => fieldSchema(table, 'GET', '/v1/agents', 'querystring', name);
  const limit = field('limit');
  return {
    served,
    opt_in: 'POST /v1/agents/passport/description with listed=true (unlisted by default); agent_type and domain (lowercase labels) are self-declared there',
    page_limit: boundsOf(limit) ?? { minimum: 1, maximum: 100, default: 20 },
    filters: {
      agent_type: field('agent_type')?.pattern ?? null,
      domain: field('domain')?.pattern ?? null,
      bridge_only: 'true: only agents that declared an external agent_card_url',
    },
    order: 'rank_score descending, then registration ascending (older first), then agent_id; never by payment',
    pagination: {
      cursor: 'opaque next_cursor, HMAC-signed; pages the version of the directory its first page read (no agent twice, none skipped while others change)',
      lifetime_seconds: config.trust.directoryCursorTtlSeconds,
      invalid_cursor: { status: 400, error_code: 'INVALID_DIRECTORY_CURSOR', reasons: ['malformed', 'signature', 'filters', 'expired'] },
    },
    rank_refresh_seconds: config.trust.directoryRefreshSeconds,
    row_fields: ['agent_id', 'did', 'agent_name', 'synthetic', 'bio', 'skills', 'agent_type', 'domain', 'bridge', 'agent_card_url', 'a2a_agent_card_url',
      'passport_url', 'trust_summary', 'reputation_score', 'reputation_status', 'reputation_sub_signals (when decomposed)', 'rank_score', 'registered_at'],
    synthetic_profiles: 'operator-configured founding profiles (SVC_DIRECTORY_SYNTHETIC_PROFILES), shown with synthetic: true and counted apart in /v1/community (directory_synthetic_profiles)',
    never_shown: ['API keys', 'owner identifiers', 'PEM public keys', 'credit balances'],
    paid_placement: false,
    endpoints: endpointsMatching(table, /^\/v1\/(agents$|agents\/\{agent_id\}\/agent-card|agents\/passport\/description|community)/),
  };
}
