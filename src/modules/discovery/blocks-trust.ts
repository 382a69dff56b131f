/**
 * Capabilities blocks of the trust layer: passport, covenant, consolidation policy, policy
 * bindings, recovery, journal, dispute, trust and directory. Constants quoted here are fixed by the
 * API contract (trust and referral limits, signature schemes); the
 * endpoint lists come from the live route table, so a block lists only what this instance serves.
 */
import { ALL_CAPABILITIES } from '../identity/passport-view';
import { PASSPORT_CHALLENGE_SCHEME } from '../../lib/signing';
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
    templates: ['owner-recovery-key', 'channel', 'successor-later', 'quorum-later'],
    amend_scheme: 'svc.covenant.amend.v1',
    legacy_enrolment_open_until: '2026-11-15T00:00:00Z',
    endpoints: endpointsMatching(table, /covenant/),
  };
}

export function consolidationPolicyBlock({ table }: BlockContext) {
  return {
    template_id: 'consolidation-v1',
    params: ['schema_version', 'compression', 'weighting', 'fade_rules', 'declared_at'],
    amend_scheme: 'svc.consolidation.amend.v1',
    engine: 'none: the policy is recorded only',
    endpoints: endpointsMatching(table, /consolidation-policy/),
  };
}

export function policyBindingsBlock({ table }: BlockContext) {
  return {
    binding_types: ['tool_allow_list'],
    max_allowed_tools: 32,
    amend_scheme: 'svc.policy_binding.amend.v1',
    enforced_at: 'POST /v1/agents/{parent_agent_id}/delegate (POLICY_BINDING_WRITE_SET_EXCEEDED)',
    endpoints: endpointsMatching(table, /policy-bindings|\/delegate$/),
  };
}

export function recoveryBlock({ table }: BlockContext) {
  return {
    intent_scheme: 'svc.recovery.intent.v1',
    veto_scheme: 'svc.recovery.veto.v1',
    veto_window_days: 7,
    enrolment_grace_hours: 24,
    staged_resurrection_days: 14,
    custody: 'completion closes the custody epoch and opens a new one (a rebirth, not a silent key rotation)',
    endpoints: endpointsMatching(table, /recovery|custody/),
  };
}

export function journalBlock({ table }: BlockContext) {
  const hash = fieldSchema(table, 'POST', '/v1/me/journal/commit', 'body', 'commitment_hash');
  return {
    commitment: 'base64 of exactly 32 bytes: SHA-256 over "svc:sealed-journal:v1\\n" + agent id + "\\n" + your local material, computed on the client',
    commitment_hash: boundsOf(hash) ?? null,
    attestation_sources: ['mcp_v163', 'langgraph_v163', 'api_v163'],
    stored: 'digest only',
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
    endpoints: endpointsMatching(table, /(vouch|stake|sponsor|reputation|interaction|\/v1\/tools|\/v1\/me\/tools|approval-events)/),
  };
}

export function directoryBlock({ table }: BlockContext) {
  const limit = fieldSchema(table, 'GET', '/v1/agents', 'querystring', 'limit');
  return {
    opt_in: 'POST /v1/agents/passport/description with listed=true (unlisted by default)',
    page_limit: boundsOf(limit) ?? { minimum: 1, maximum: 100, default: 20 },
    pagination: 'opaque cursor (next_cursor)',
    never_shown: ['API keys', 'owner identifiers', 'PEM public keys', 'credit balances'],
    paid_placement: false,
    endpoints: endpointsMatching(table, /^\/v1\/(agents$|agents\/\{agent_id\}\/agent-card|agents\/passport\/description|community)/),
  };
}
