/**
 * Route schemas of the declarations. Fields a handler checks itself (template, params, binding type,
 * signature, journal body) are loose here and declared as inputRules, so each refusal carries its own
 * code (CONSOLIDATION_POLICY_PARAMS_INVALID, not VALIDATION_FAILED) and a signed body reaches the
 * signature check exactly as sent (Ajv drops nothing from it).
 */
import { Type } from 'typebox';
import { IsoTime, Nullable } from '../../http/response-schemas';
import type { InputRule } from '../../http/route-config';
import { CONSOLIDATION_TEMPLATE_ID, ConsolidationParams } from './consolidation-params';
import {
  DELEGATION_DEFAULT_EXPIRES_IN, DELEGATION_EXPIRES_MAX, DELEGATION_EXPIRES_MIN, DELEGATION_LABEL_MAX, WRITE_SET_MAX,
} from './delegation';
import { ATTESTATION_CLIENT_MAX, ATTESTATION_SOURCES } from './journal';
import { BINDING_TYPES, MAX_ALLOWED_TOOLS, TOOL_NAME_PATTERN } from './policies';
import { RISK_CLASSES } from './tools';

export const AgentParams = Type.Object({ agent_id: Type.String({ maxLength: 64 }) });
export const ParentParams = Type.Object({ parent_agent_id: Type.String({ maxLength: 64, description: 'Your own agent id (the bearer is the parent)' }) });
export const ToolParams = Type.Object({ tool_id: Type.String({ maxLength: 64, description: 'The tool_id POST /v1/me/tools returned' }) });

const signed = {
  challenge_id: Type.Optional(Type.String({ description: 'A challenge_id from POST /v1/auth/passport/challenge (single use)' })),
  passport_signature: Type.Optional(Type.String({ description: 'base64 of the raw Ed25519 signature by your passport key over the scheme\'s bytes (docs/trust.md, "Signed requests")' })),
};
const signedRules: InputRule[] = [
  { part: 'body', field: 'challenge_id', required: true, schema: { minLength: 1 } },
  { part: 'body', field: 'passport_signature', required: true, schema: { minLength: 1 } },
];
const signedCodes = {
  'body.challenge_id': { status: 422, code: 'PASSPORT_SIGNATURE_REQUIRED', message: 'challenge_id must be a string: a challenge_id from POST /v1/auth/passport/challenge' },
  'body.passport_signature': { status: 422, code: 'PASSPORT_SIGNATURE_REQUIRED', message: 'passport_signature must be a string: base64 of the raw Ed25519 signature' },
};

export const ConsolidationAmendBody = Type.Object({
  template_id: Type.Optional(Type.String({ description: `"${CONSOLIDATION_TEMPLATE_ID}"` })),
  params: Type.Optional(Type.Unknown({ description: `The ${CONSOLIDATION_TEMPLATE_ID} params: schema_version, compression, weighting, fade_rules (capabilities consolidation_policy.params_schema); declared_at is set by svc` })),
  ...signed,
});
export const ConsolidationAmendRules: InputRule[] = [
  { part: 'body', field: 'template_id', required: true, schema: { enum: [CONSOLIDATION_TEMPLATE_ID] } },
  { part: 'body', field: 'params', required: true, schema: JSON.parse(JSON.stringify(ConsolidationParams)) as Record<string, unknown> },
  ...signedRules,
];
export const ConsolidationAmendCodes = {
  'body.template_id': { status: 422, code: 'CONSOLIDATION_POLICY_TEMPLATE_INVALID', message: `template_id must be "${CONSOLIDATION_TEMPLATE_ID}"` },
  ...signedCodes,
};

export const AllowListParams = Type.Object({
  allowed_tools: Type.Array(Type.String({ pattern: TOOL_NAME_PATTERN }), { maxItems: MAX_ALLOWED_TOOLS, uniqueItems: true, description: `Up to ${MAX_ALLOWED_TOOLS} distinct tool names` }),
}, { additionalProperties: false });

export const BindingAmendBody = Type.Object({
  binding_type: Type.Optional(Type.String({ description: BINDING_TYPES.join(' | ') })),
  params: Type.Optional(Type.Unknown({ description: `tool_allow_list: {allowed_tools: up to ${MAX_ALLOWED_TOOLS} distinct tool names}` })),
  ...signed,
});
export const BindingAmendRules: InputRule[] = [
  { part: 'body', field: 'binding_type', required: true, schema: { enum: [...BINDING_TYPES] } },
  { part: 'body', field: 'params', required: true, schema: JSON.parse(JSON.stringify(AllowListParams)) as Record<string, unknown> },
  ...signedRules,
];
export const BindingAmendCodes = {
  'body.binding_type': { status: 422, code: 'POLICY_BINDING_TYPE_INVALID', message: `binding_type must be one of: ${BINDING_TYPES.join(', ')}` },
  ...signedCodes,
};
export const BindingsQuery = Type.Object({
  binding_type: Type.Optional(Type.String({ maxLength: 64, description: `Only this binding type (${BINDING_TYPES.join(', ')}); 404 POLICY_BINDING_NOT_FOUND when the agent has none` })),
});

export const DelegateBody = Type.Object({
  write_set: Type.Array(Type.String({ pattern: TOOL_NAME_PATTERN }), {
    minItems: 1, maxItems: WRITE_SET_MAX, uniqueItems: true,
    description: 'svc tool names the delegated key may use (e.g. svc_memory); its scopes are the capabilities their routes need',
  }),
  label: Type.Optional(Type.String({ minLength: 1, maxLength: DELEGATION_LABEL_MAX, pattern: '^[^\\u0000-\\u001F\\u007F]*$', description: `Your name for the key, at most ${DELEGATION_LABEL_MAX} characters` })),
  expires_in: Type.Optional(Type.Integer({
    minimum: DELEGATION_EXPIRES_MIN, maximum: DELEGATION_EXPIRES_MAX, default: DELEGATION_DEFAULT_EXPIRES_IN,
    description: `Seconds until the key stops working (${DELEGATION_EXPIRES_MIN} to ${DELEGATION_EXPIRES_MAX}; default ${DELEGATION_DEFAULT_EXPIRES_IN})`,
  })),
});
export const DelegateCodes = {
  'body.write_set': { status: 422, code: 'DELEGATION_WRITE_SET_INVALID', message: `write_set is required: 1 to ${WRITE_SET_MAX} distinct svc tool names` },
  'body.label': { status: 422, code: 'INVALID_KEY_LABEL', message: `label must be a string of 1 to ${DELEGATION_LABEL_MAX} characters without control characters` },
  'body.expires_in': { status: 422, code: 'INVALID_KEY_EXPIRY', message: `expires_in must be an integer number of seconds from ${DELEGATION_EXPIRES_MIN} to ${DELEGATION_EXPIRES_MAX}` },
};

export const JournalCommitBody = Type.Object({
  commitment_hash: Type.Optional(Type.Unknown({ description: 'base64 of exactly 32 bytes: SHA-256 over "svc:sealed-journal:v1" LF agent_id LF your material, computed on your side' })),
  commit_attestation: Type.Optional(Type.Unknown({ description: `Optional {source: ${ATTESTATION_SOURCES.join(' | ')}, client?: string}` })),
}, { description: 'Only these two fields: a body carrying anything else (the journal material) is refused with JOURNAL_PREIMAGE_FORBIDDEN' });
export const JournalCommitRules: InputRule[] = [
  { part: 'body', field: 'commitment_hash', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9+/_-]{43}=?$' } },
  {
    part: 'body', field: 'commit_attestation', schema: {
      type: 'object', additionalProperties: false, required: ['source'],
      properties: { source: { enum: [...ATTESTATION_SOURCES] }, client: { type: 'string', minLength: 1, maxLength: ATTESTATION_CLIENT_MAX } },
    },
  },
];
export const JournalListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  cursor: Type.Optional(Type.String({ maxLength: 32, description: 'next_cursor of the previous page (opaque)' })),
});

const toolText = (max: number, description: string) => Type.String({ minLength: 1, maxLength: max, pattern: '^[^\\u0000-\\u0009\\u000B-\\u001F\\u007F]*\\S[^\\u0000-\\u0009\\u000B-\\u001F\\u007F]*$', description });
export const RegisterToolBody = Type.Object({
  name: Type.String({ pattern: TOOL_NAME_PATTERN, description: 'The tool\'s name, unique among your active tools (1 to 64 letters, digits, _ . : -)' }),
  description: toolText(500, 'What the tool does, at most 500 characters'),
  public_key: Type.Optional(Type.Union([Type.String({ maxLength: 4096, description: 'The tool\'s Ed25519 public key: PEM SPKI or base64 of the raw 32 bytes (never a private key)' }), Type.Null()])),
  risk_class: Type.Union(RISK_CLASSES.map((r) => Type.Literal(r)), { description: 'low or high: declared by you, not verified by svc' }),
  model_provenance_hash: Type.Optional(Type.Union([Type.String({ pattern: '^[a-z0-9-]{1,16}:[0-9a-fA-F]{32,128}$', description: 'algorithm:hex digest of the model (e.g. sha256:…); declared, not verified' }), Type.Null()])),
  model_provenance_label: Type.Optional(Type.Union([toolText(200, 'The model\'s name or version; declared, not verified'), Type.Null()])),
});
export const RotateToolBody = Type.Object({
  public_key: Type.String({ maxLength: 4096, description: 'The tool\'s new Ed25519 public key: PEM SPKI or base64 of the raw 32 bytes' }),
});
export const ToolKeyCodes = {
  'body.public_key': { status: 422, code: 'INVALID_TOOL_PUBLIC_KEY', message: 'public_key must be an Ed25519 public key: PEM SPKI or base64 of the raw 32 bytes' },
};

// ---- responses ----

const Status = Type.String({ description: 'success' });

/** A consolidation policy (policies.ts policyView): params as declared, with the declared_at svc set. */
export const ConsolidationPolicyView = Type.Object({
  agent_id: Type.String(),
  template_id: Type.String({ description: CONSOLIDATION_TEMPLATE_ID }),
  params: Type.Object({ ...ConsolidationParams.properties, declared_at: IsoTime() }),
  version: Type.Integer({ description: '1 for the first declaration, one more per amend' }),
  declared_at: IsoTime(),
  log_index: Type.Integer({ description: 'The consolidation.amended trust log entry' }),
  recorded_only: Type.Boolean({ description: 'Always true: svc runs no consolidation engine' }),
  notice: Type.String(),
});
export const ConsolidationPolicyResponse = Type.Object({ status: Status, policy: ConsolidationPolicyView });

/** A policy binding (policies.ts bindingView). */
export const PolicyBindingView = Type.Object({
  binding_type: Type.String({ description: BINDING_TYPES.join(' | ') }),
  params: Type.Object({ allowed_tools: Type.Array(Type.String()) }, { description: 'tool_allow_list: the tool names allowed' }),
  params_sha256: Type.String({ description: 'SHA-256 (hex) of the params\' RFC 8785 bytes, as the trust log entry records it' }),
  version: Type.Integer(),
  bound_at: IsoTime(),
  log_index: Type.Integer({ description: 'The policy_binding.amended trust log entry' }),
});
export const PolicyBindingsResponse = Type.Object({ status: Status, agent_id: Type.String(), bindings: Type.Array(PolicyBindingView) });
export const PolicyBindingResponse = Type.Object({ status: Status, binding: PolicyBindingView });

/** POST /v1/agents/{parent_agent_id}/delegate (201): the delegated key, shown once. */
export const DelegateResponse = Type.Object({
  status: Status,
  api_key: Type.String({ description: 'The delegated key: shown once, only its SHA-256 is stored' }),
  key_id: Type.String(),
  scopes: Type.Array(Type.String(), { description: 'The capabilities the write_set\'s routes need' }),
  label: Nullable(Type.String()),
  created_at: IsoTime(),
  expires_at: Nullable(IsoTime()),
  kind: Type.String({ description: 'scoped' }),
  parent_agent_id: Type.String(),
  write_set: Type.Array(Type.String()),
  delegation_log_index: Type.Integer({ description: 'The delegation.issued trust log entry' }),
  policy_binding_log_index: Nullable(Type.Integer({ description: 'The tool_allow_list binding the write_set was checked against; null without one' })),
});

/** A journal commitment (journal.ts view). */
export const JournalCommitmentView = Type.Object({
  commitment_id: Type.String(),
  agent_id: Type.String(),
  commitment_hash: Type.String({ description: 'base64 of the 32-byte digest (standard alphabet, padded)' }),
  commit_attestation: Nullable(Type.Object({
    source: Type.String({ description: ATTESTATION_SOURCES.join(' | ') }),
    client: Type.Optional(Type.String()),
  })),
  epoch: Type.Integer({ description: 'The custody epoch it was committed in' }),
  committed_at: IsoTime(),
  log_index: Type.Integer({ description: 'The journal.committed trust log entry: its inclusion proof shows when' }),
});
export const JournalCommitResponse = Type.Object({
  status: Status,
  ...JournalCommitmentView.properties,
  leaf_hash: Type.String({ description: 'RFC 9162 leaf hash of the trust log entry (base64)' }),
});
export const JournalCommitmentsResponse = Type.Object({
  status: Status,
  agent_id: Type.String(),
  commitments: Type.Array(JournalCommitmentView),
  total: Type.Integer(),
  next_cursor: Nullable(Type.String({ description: 'Pass as cursor for the next page; null on the last' })),
});

/** A tool passport (tools.ts passportView): never private material. */
export const ToolPassportView = Type.Object({
  did: Type.String({ description: 'did:svc:tool:<tool_id>' }),
  tool_id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  owner: Type.Object({ agent_id: Type.String(), did: Type.String(), passport_url: Type.String() }),
  public_key: Nullable(Type.String({ description: 'PEM SPKI Ed25519 public key' })),
  public_key_sha256: Nullable(Type.String({ description: 'SHA-256 (hex) of the key\'s SPKI DER' })),
  key_algorithm: Nullable(Type.String({ description: 'ed25519' })),
  key_version: Type.Integer(),
  risk_class: Type.String({ description: `${RISK_CLASSES.join(' or ')}, declared` }),
  risk_class_notice: Type.String(),
  model_provenance: Nullable(Type.Object({
    hash: Nullable(Type.String()),
    label: Nullable(Type.String()),
    verified: Type.Boolean({ description: 'Always false: declared by the developer' }),
    notice: Type.String(),
  })),
  status: Type.String({ description: 'active or revoked' }),
  created_at: IsoTime(),
  rotated_at: Nullable(IsoTime()),
  revoked_at: Nullable(IsoTime()),
  log_indexes: Type.Object({
    registered: Type.Integer(),
    rotated: Nullable(Type.Integer({ description: 'The last rotation' })),
    revoked: Nullable(Type.Integer()),
  }),
  passport_url: Type.String(),
});
export const ToolPassportResponse = Type.Object({ status: Status, passport: ToolPassportView });
