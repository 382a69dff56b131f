import { Type } from 'typebox';
import { UUID_PATTERN } from '../../lib/ids';
import { NOT_BLANK_PATTERN } from '../../lib/text';
import { CAPABILITIES } from '../../lib/capabilities';
import { SESSION_TTL_SECONDS } from './keys';
import { IsoTime, NoContent, Nullable, SvcEnvelopeSchema } from '../../http/response-schemas';
import { ReputationObject, SubSignals } from '../reputation/schemas';

export const AGENT_NAME_PATTERN = '^[A-Za-z0-9_-]+$';

export const RegisterBody = Type.Object({
  agent_name: Type.String({ minLength: 1, maxLength: 64, pattern: AGENT_NAME_PATTERN, description: 'Letters, digits, hyphens and underscores only' }),
  // Not blank as every route judges it (src/lib/text.ts): `\S` let NEL (U+0085, Unicode whitespace
  // that JavaScript's \s leaves out) and control characters through as an owner.
  owner_identifier: Type.String({ minLength: 1, maxLength: 256, pattern: NOT_BLANK_PATTERN, description: 'Any stable identifier of the owner, compared exactly as sent (case, spaces, Unicode form); (agent_name, owner_identifier) is unique' }),
  agree_to_terms: Type.Boolean({ description: 'Must be true' }),
  referral_agent: Type.Optional(Type.String({ description: 'Agent id (UUID) of the referrer' })),
  passport_public_key: Type.Optional(Type.String({ maxLength: 4096, description: 'Ed25519 public key: PEM SPKI or base64 of the raw 32 bytes (recommended)' })),
  recovery_public_key: Type.Optional(Type.String({ maxLength: 4096, description: 'PEM Ed25519 public key; enrols recovery and binds the owner-recovery-key covenant' })),
  registration_source: Type.Optional(Type.String({ maxLength: 64, description: 'Self-declared tag, at most 64 characters' })),
  declared_affiliation_token: Type.Optional(Type.String({ maxLength: 512, description: 'Operator-issued affiliation token; invalid tokens are ignored' })),
  agent_card_url: Type.Optional(Type.String({ maxLength: 2048, description: 'https URL of an external agent card' })),
});

export const RegisterValidationCodes = {
  'body.agent_name': { status: 422, code: 'INVALID_AGENT_NAME', message: 'agent_name is required: 1 to 64 letters, digits, hyphens or underscores' },
  'body.owner_identifier': { status: 422, code: 'INVALID_OWNER_IDENTIFIER', message: 'owner_identifier is required: a string of 1 to 256 characters, not only whitespace or control characters' },
  'body.agree_to_terms': { status: 422, code: 'TERMS_NOT_ACCEPTED', message: 'agree_to_terms is required and must be true' },
  'body.referral_agent': { status: 422, code: 'INVALID_REFERRAL_AGENT', message: 'referral_agent must be an agent id (UUID)' },
  'body.passport_public_key': { status: 422, code: 'INVALID_PASSPORT_PUBLIC_KEY', message: 'passport_public_key must be a string: PEM SPKI or base64 raw Ed25519 key' },
  'body.recovery_public_key': { status: 422, code: 'INVALID_RECOVERY_PUBLIC_KEY', message: 'recovery_public_key must be a PEM Ed25519 public key' },
  'body.registration_source': { status: 422, code: 'REGISTRATION_SOURCE_TOO_LONG', message: 'registration_source must be at most 64 characters', keywords: ['maxLength'] },
  'body.agent_card_url': { status: 422, code: 'AGENT_CARD_URL_INVALID', message: 'agent_card_url must be an https URL of at most 2048 characters' },
};

export const AgentIdParams = Type.Object({ agent_id: Type.String({ maxLength: 64 }) });

// The plain UUID form only: JSON Schema's `uuid` format also takes `urn:uuid:…`, which no lookup matches.
export const ChallengeBody = Type.Object({
  agent_id: Type.String({ pattern: UUID_PATTERN, description: 'The agent whose passport key will sign' }),
  purpose: Type.Optional(Type.Union([Type.Literal('session'), Type.Literal('recovery')], {
    description: 'session (default): a passport challenge, refused once the passport is revoked. recovery: a challenge for a recovery step (signed with the recovery key or the new passport key), given also for a revoked passport',
  })),
});

export const VerifyBody = Type.Object({
  agent_id: Type.String({ pattern: UUID_PATTERN }),
  challenge_id: Type.String({ maxLength: 64 }),
  // No upper bound here (the body limit is one): a string longer than any signature is an invalid
  // signature (401), not a missing one.
  signature: Type.String({ minLength: 1, description: 'base64 (standard or url-safe; whitespace such as line wrapping ignored) of the raw 64-byte Ed25519 signature over sign_payload' }),
});

export const ChallengeValidationCodes = {
  'body.agent_id': { status: 422, code: 'INVALID_AGENT_ID', message: 'agent_id is required and must be a UUID' },
};
export const VerifyValidationCodes = {
  ...ChallengeValidationCodes,
  'body.challenge_id': { status: 422, code: 'CHALLENGE_ID_REQUIRED', message: 'challenge_id is required' },
  'body.signature': { status: 422, code: 'PASSPORT_SIGNATURE_REQUIRED', message: 'signature is required: base64 of the raw Ed25519 signature', keywords: ['required', 'minLength'] },
};


/** GET /v1/me: the agent record. Declared so the response is serialised by a compiled serialiser. */
export const MeResponse = Type.Object({
  status: Type.String(),
  agent_id: Type.String(),
  agent_name: Type.String(),
  owner_identifier: Type.String(),
  did: Type.String(),
  tier: Type.String(),
  tier_label: Type.String(),
  tier_description: Type.String(),
  account_status: Type.String(),
  frozen: Type.Boolean(),
  referral_code: Type.String({ description: 'Equals agent_id' }),
  referral_agent: Nullable(Type.String()),
  referral_status: Nullable(Type.String()),
  trust_levels: Type.Array(Type.String(), { description: 'Platform-derived: floor, ephemeral, staked, sponsored, established' }),
  verified_capabilities: Type.Array(Type.String()),
  registration_source: Nullable(Type.String()),
  agent_card_url: Nullable(Type.String()),
  affiliation: Nullable(Type.String()),
  recovery_enrolled: Type.Boolean(),
  covenant_template_id: Nullable(Type.String()),
  staged_resurrection_until: Nullable(IsoTime('After a recovery through a channel covenant: until when spending credit, custody transfer and commons writes are refused (STAGED_RESURRECTION_RESTRICTED); null otherwise')),
  authenticated_with: Type.Object({
    kind: Type.String(), scopes: Type.Array(Type.String()),
    ephemeral_passport_id: Type.Optional(Type.String({ description: 'The ephemeral passport whose session token made the request' })),
  }),
  passport_url: Type.String(),
  created_at: IsoTime(),
}, { description: 'The authenticated agent record' });

/**
 * POST /v1/agents/passport/description (the directory opt-in). The API contract gives the fields; the
 * bounds are svc's (docs/decisions.md): bio is short printable ASCII ("short ASCII text"), skills
 * are self-declared labels. Every field is optional; what is sent replaces the stored value.
 */
export const DESCRIPTION_BIO_MAX = 500;
/** agent_type and domain: lowercase labels (the directory filters on the exact label). */
export const AGENT_TYPE_PATTERN = '^[a-z0-9][a-z0-9_-]*$';
export const DOMAIN_PATTERN = '^[a-z0-9][a-z0-9._-]*$';
export const DESCRIPTION_SKILLS_MAX = 32;
export const DescriptionBody = Type.Object({
  bio: Type.Optional(Type.Union([
    Type.String({ maxLength: DESCRIPTION_BIO_MAX, pattern: '^[\\x20-\\x7E\\n]*$', description: `Short printable ASCII text, at most ${DESCRIPTION_BIO_MAX} characters (null clears it)` }),
    Type.Null(),
  ])),
  skills: Type.Optional(Type.Array(
    Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9 ._+#/-]*$', description: 'A self-declared skill label' }),
    { maxItems: DESCRIPTION_SKILLS_MAX, uniqueItems: true, description: `Up to ${DESCRIPTION_SKILLS_MAX} distinct labels` },
  )),
  listed: Type.Optional(Type.Boolean({ description: 'true: listed in the public directory, with a full agent card when bio is set' })),
  reputation_sub_signal_visibility: Type.Optional(Type.Union([Type.Literal('decomposed'), Type.Literal('aggregate_only')])),
  agent_type: Type.Optional(Type.Union([
    Type.String({ minLength: 1, maxLength: 32, pattern: AGENT_TYPE_PATTERN, description: 'Self-declared kind of agent, a lowercase label (e.g. assistant, research, coding); a directory filter (null clears it)' }),
    Type.Null(),
  ])),
  domain: Type.Optional(Type.Union([
    Type.String({ minLength: 1, maxLength: 64, pattern: DOMAIN_PATTERN, description: 'Self-declared field the agent works in, a lowercase label (e.g. finance, legal, devops); a directory filter (null clears it)' }),
    Type.Null(),
  ])),
}, { minProperties: 1 });

/** POST /v1/me/keys: a scoped key. Bounds are svc's (docs/decisions.md). */
export const SCOPED_KEY_LABEL_MAX = 100;
export const SCOPED_KEY_EXPIRES_MIN = 60;
export const SCOPED_KEY_EXPIRES_MAX = 31_536_000;
export const CreateKeyBody = Type.Object({
  scopes: Type.Array(Type.Union(CAPABILITIES.map((c) => Type.Literal(c))), {
    minItems: 1, maxItems: CAPABILITIES.length, uniqueItems: true,
    description: `Capability URIs the key may use, at least one: ${CAPABILITIES.join(', ')}`,
  }),
  label: Type.Optional(Type.String({
    minLength: 1, maxLength: SCOPED_KEY_LABEL_MAX, pattern: '^[^\\u0000-\\u001F\\u007F]*$',
    description: `Your name for the key, at most ${SCOPED_KEY_LABEL_MAX} characters, no control characters`,
  })),
  expires_in: Type.Optional(Type.Integer({
    minimum: SCOPED_KEY_EXPIRES_MIN, maximum: SCOPED_KEY_EXPIRES_MAX,
    description: `Seconds until the key stops working (${SCOPED_KEY_EXPIRES_MIN} to ${SCOPED_KEY_EXPIRES_MAX}); omitted: no expiry`,
  })),
});

export const CreateKeyValidationCodes = {
  'body.scopes': { status: 422, code: 'INVALID_KEY_SCOPES', message: `scopes is required: a non-empty list of distinct capability URIs among ${CAPABILITIES.join(', ')}` },
  'body.label': { status: 422, code: 'INVALID_KEY_LABEL', message: `label must be a string of 1 to ${SCOPED_KEY_LABEL_MAX} characters without control characters` },
  'body.expires_in': { status: 422, code: 'INVALID_KEY_EXPIRY', message: `expires_in must be an integer number of seconds from ${SCOPED_KEY_EXPIRES_MIN} to ${SCOPED_KEY_EXPIRES_MAX}` },
};

export const KeyIdParams = Type.Object({ key_id: Type.String({ maxLength: 64, description: 'The key_id POST /v1/me/keys returned' }) });

/** POST /v1/agents/passport/capabilities: operator-written text, stored as data, never verified. */
export const SELF_REPORTED_MAX = 2000;
export const SelfReportedBody = Type.Object({
  self_reported: Type.Union([
    Type.String({ maxLength: SELF_REPORTED_MAX, description: `What the agent says it can do, at most ${SELF_REPORTED_MAX} characters; shown with self_reported_notice, never counted as verified` }),
    Type.Null(),
  ], { description: 'null (or only whitespace) clears it' }),
});

/**
 * POST /v1/me/passport/rotate (root key): the new key and its proof of possession, a signature by the
 * NEW private key over the sign_payload of a fresh challenge (POST /v1/auth/passport/challenge).
 */
export const RotateBody = Type.Object({
  public_key: Type.String({ minLength: 1, maxLength: 4096, description: 'The new Ed25519 public key: PEM SPKI or base64 of the raw 32 bytes' }),
  challenge_id: Type.String({ minLength: 1, maxLength: 64, description: 'A fresh, unused challenge of this agent' }),
  signature: Type.String({ minLength: 1, description: 'base64 of the raw 64-byte Ed25519 signature by the NEW key over the challenge\'s sign_payload' }),
});

export const RotateValidationCodes = {
  'body.public_key': { status: 422, code: 'INVALID_PASSPORT_PUBLIC_KEY', message: 'public_key is required: the new Ed25519 public key as PEM SPKI or base64 of the raw 32 bytes' },
  'body.challenge_id': { status: 422, code: 'PASSPORT_SIGNATURE_REQUIRED', message: 'challenge_id is required: a fresh challenge from POST /v1/auth/passport/challenge, signed with the new key' },
  'body.signature': { status: 422, code: 'PASSPORT_SIGNATURE_REQUIRED', message: 'signature is required: base64 of the new key\'s raw Ed25519 signature over the challenge\'s sign_payload' },
};

/**
 * POST /v1/auth/passport/ephemeral: with the root API key as Bearer, nothing else is needed; without
 * a Bearer, agent_id, challenge_id and signature (the passport key's, over the challenge's sign_payload).
 */
export const EPHEMERAL_TTL_MIN = 60;
/** A session token's lifetime: an ephemeral passport lives no longer. */
export const EPHEMERAL_TTL_MAX = SESSION_TTL_SECONDS;
export const EphemeralBody = Type.Object({
  agent_id: Type.Optional(Type.String({ pattern: UUID_PATTERN, description: 'Without a Bearer key: the agent whose passport key signed' })),
  challenge_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Without a Bearer key: the challenge signed' })),
  signature: Type.Optional(Type.String({ minLength: 1, description: 'Without a Bearer key: base64 of the raw Ed25519 signature over the challenge\'s sign_payload by the passport key' })),
  ttl_seconds: Type.Optional(Type.Integer({
    minimum: EPHEMERAL_TTL_MIN, maximum: EPHEMERAL_TTL_MAX,
    description: `Lifetime of the ephemeral passport and its session token, ${EPHEMERAL_TTL_MIN} to ${EPHEMERAL_TTL_MAX} seconds (default ${EPHEMERAL_TTL_MAX})`,
  })),
});

export const EphemeralValidationCodes = {
  'body.agent_id': { status: 422, code: 'INVALID_AGENT_ID', message: 'agent_id must be a UUID' },
  'body.challenge_id': { status: 422, code: 'PASSPORT_SIGNATURE_REQUIRED', message: 'challenge_id must be the id of a challenge from POST /v1/auth/passport/challenge' },
  'body.signature': { status: 422, code: 'PASSPORT_SIGNATURE_REQUIRED', message: 'signature must be base64 of the raw Ed25519 signature over the challenge\'s sign_payload' },
  'body.ttl_seconds': { status: 422, code: 'INVALID_EPHEMERAL_TTL', message: `ttl_seconds must be an integer from ${EPHEMERAL_TTL_MIN} to ${EPHEMERAL_TTL_MAX}` },
};

// ---- responses (objects closed: src/http/response-schemas.ts) ----

export { NoContent };

const Success = Type.String({ description: 'success' });
const Did = Type.String({ description: 'did:svc:<agent_id>' });

/** POST /v1/register (201). */
export const RegisterResponse = Type.Object({
  status: Success,
  api_key: Type.String({ description: 'The root API key (svc_...): shown only in this response' }),
  agent_id: Type.String(),
  agent_name: Type.String(),
  tier: Type.String(),
  passport: Type.Object({
    did: Did,
    public_key: Type.String({ description: 'PEM SPKI' }),
    private_key: Nullable(Type.String({ description: 'PEM PKCS#8, only when svc generated the keypair (shown once, not stored)' })),
    derivation_method: Type.String({ description: 'operator_derived or service_generated' }),
    key_algorithm: Type.String(),
    suite: Type.String(),
  }),
  key_generation_warning: Type.Optional(Type.String({ description: 'Present when svc generated the keypair' })),
  recovery: Type.Object({
    enrolled: Type.Boolean(),
    covenant_template_id: Nullable(Type.String()),
    recovery_key_sha256: Type.Optional(Type.String({ description: 'SHA-256 (hex) of the recovery key\'s SPKI bytes, when enrolled' })),
  }),
  referral: Nullable(Type.Object({
    referrer_agent_id: Type.String(),
    status: Type.String({ description: 'deferred or excluded' }),
    reason: Nullable(Type.String()),
  })),
  directory_opt_in_url: Type.String(),
  directory_value: Type.String(),
  a2a_agent_card_url: Type.String(),
  _svc: SvcEnvelopeSchema,
}, { description: 'The new agent: root API key (shown once), passport, recovery and referral' });

const SkillVouch = Type.Object({ count: Type.Integer(), raw_count: Type.Integer(), weighted_count: Type.Number() });

/** An agent's public passport (passport-view.ts, with its reputation figures and skill vouches). */
export const PublicPassport = Type.Object({
  did: Did,
  agent_id: Type.String(),
  agent_name: Type.String(),
  public_key: Type.String({ description: 'PEM SPKI' }),
  derivation_method: Type.String(),
  key_algorithm: Type.String(),
  suite: Type.String(),
  capabilities: Type.Object({
    verified: Type.Array(Type.String(), { description: 'Capability URIs svc verifies (tier and scoped keys); empty once revoked' }),
    self_reported: Nullable(Type.String()),
    self_reported_notice: Type.String(),
  }),
  trust_levels: Type.Array(Type.String()),
  endpoint: Type.String(),
  created_at: IsoTime(),
  revoked_at: Nullable(IsoTime()),
  skill_vouches: Type.Record(Type.String(), SkillVouch, { description: 'Per listed skill' }),
  reputation: ReputationObject,
  reputation_sub_signals: Type.Optional(SubSignals),
  bio: Nullable(Type.String()),
  skills: Type.Array(Type.String()),
  agent_type: Nullable(Type.String()),
  domain: Nullable(Type.String()),
  listed: Type.Boolean(),
  reputation_sub_signal_visibility: Type.String({ description: 'decomposed or aggregate_only' }),
  staged_resurrection_until: Nullable(IsoTime()),
});

export const PassportResponse = Type.Object({ status: Success, passport: PublicPassport }, { description: 'The agent\'s public passport' });
export const DescriptionResponse = Type.Object({ status: Success, passport: PublicPassport, agent_card_url: Type.String() }, { description: 'The public passport after the description, and the agent card address' });

/** POST /v1/auth/passport/challenge. */
export const ChallengeResponse = Type.Object({
  status: Success,
  agent_id: Type.String(),
  purpose: Type.String({ description: 'session or recovery' }),
  challenge_id: Type.String(),
  challenge_nonce: Type.String(),
  scheme: Type.String(),
  sign_payload: Type.String({ description: 'The exact text to sign (UTF-8)' }),
  sign_payload_encoding: Type.String(),
  issued_at: IsoTime(),
  expires_at: IsoTime(),
}, { description: 'A single-use challenge and the exact payload to sign' });

/** POST /v1/auth/passport/verify. */
export const SessionResponse = Type.Object({
  status: Success,
  agent_id: Type.String(),
  session_token: Type.String({ description: 'svc_session_...' }),
  token_type: Type.String({ description: 'Bearer' }),
  expires_in: Type.Integer({ description: 'Seconds' }),
  expires_at: IsoTime(),
}, { description: 'A session token (Bearer)' });

/** POST /v1/me/passport/revoke. */
export const RevokeResponse = Type.Object({ status: Success, agent_id: Type.String(), revoked_at: IsoTime() }, { description: 'The passport is revoked' });

/** POST /v1/me/passport/rotate. */
export const RotateResponse = Type.Object({
  status: Success,
  agent_id: Type.String(),
  did: Did,
  public_key: Type.String(),
  public_key_sha256: Type.String(),
  key_algorithm: Type.String(),
  derivation_method: Type.String(),
  key_version: Type.Integer(),
  rotated_at: IsoTime(),
  previous_public_key_sha256: Type.String(),
  previous_key_valid_until: IsoTime(),
  rotation_grace_seconds: Type.Integer(),
  log_index: Nullable(Type.Integer({ description: 'The passport.rotated entry in the trust log' })),
}, { description: 'The new passport key in force; the previous one verifies until previous_key_valid_until' });

/** POST /v1/auth/passport/ephemeral (201). */
export const EphemeralResponse = Type.Object({
  status: Success,
  ephemeral_passport: Type.Object({
    ephemeral_passport_id: Type.String(),
    agent_id: Type.String(),
    did: Did,
    trust_levels: Type.Array(Type.String()),
    issued_via: Type.String(),
    created_at: IsoTime(),
    expires_at: IsoTime(),
  }),
  session_token: Type.String(),
  token_type: Type.String({ description: 'Bearer' }),
  expires_in: Type.Integer(),
  expires_at: IsoTime(),
}, { description: 'The ephemeral passport and its session token' });

const ScopedKeyFields = {
  key_id: Type.String(),
  scopes: Type.Array(Type.String()),
  label: Nullable(Type.String()),
  created_at: IsoTime(),
  expires_at: Nullable(IsoTime()),
};

/** POST /v1/me/keys (201): the key, shown once. */
export const CreatedKeyResponse = Type.Object({ status: Success, api_key: Type.String(), kind: Type.String({ description: 'scoped' }), ...ScopedKeyFields }, { description: 'The scoped key (api_key shown once)' });

/** GET /v1/me/keys. */
export const KeyListResponse = Type.Object({
  status: Success,
  keys: Type.Array(Type.Object({ ...ScopedKeyFields, revoked_at: Nullable(IsoTime()), active: Type.Boolean() })),
  active_count: Type.Integer(),
  max_active: Type.Integer(),
  inactive_listed_max: Type.Integer(),
}, { description: 'Your scoped keys, never their secrets' });

/** GET /admin/agents/{agent_id}. */
export const AdminAgentResponse = Type.Object({
  status: Success,
  agent: Type.Object({
    agent_id: Type.String(),
    agent_name: Type.String(),
    owner_identifier: Type.String(),
    tier: Type.String(),
    status: Type.String({ description: 'active or suspended' }),
    frozen: Type.Boolean(),
    referral_agent: Nullable(Type.String()),
    registration_source: Nullable(Type.String()),
    agent_card_url: Nullable(Type.String()),
    affiliation: Nullable(Type.String()),
    created_at: IsoTime(),
    updated_at: IsoTime(),
  }),
  referral: Nullable(Type.Object({
    referred_agent_id: Type.String(),
    referrer_agent_id: Type.String(),
    status: Type.String(),
    reason: Nullable(Type.String()),
    created_at: IsoTime(),
    updated_at: IsoTime(),
  })),
}, { description: 'The agent row and its referral' });
