import { Type } from 'typebox';
import { IsoTime, Nullable } from '../../http/response-schemas';
import { UUID_PATTERN } from '../../lib/ids';
import { NOT_BLANK_PATTERN } from '../../lib/text';
import { TEMPLATE_PARAMS, TEMPLATES } from './model';

const ChallengeId = Type.Optional(Type.String({ maxLength: 64, description: 'A challenge from POST /v1/auth/passport/challenge (purpose recovery for the recovery steps); single use' }));
const signature = (by: string) => Type.Optional(Type.String({ description: `base64 (standard or url-safe) of the raw 64-byte Ed25519 signature by ${by} over the scheme's bytes (docs/trust.md, "Signed requests")` }));

export const AmendBody = Type.Object({
  template_id: Type.String({ maxLength: 64, description: `One of ${TEMPLATES.join(', ')}` }),
  params: Type.Object({}, {
    additionalProperties: true,
    description: `Template-specific: ${TEMPLATES.map((t) => `${t} ${TEMPLATE_PARAMS[t]}`).join('; ')}`,
  }),
  challenge_id: ChallengeId,
  passport_signature: signature('the passport key (scheme svc.covenant.amend.v1, content {template_id, params}); required when the agent is staked, sponsoring or established'),
});

export const AmendValidationCodes = {
  'body.template_id': { status: 422, code: 'COVENANT_TEMPLATE_INVALID', message: `template_id is required: one of ${TEMPLATES.join(', ')}` },
  'body.params': { status: 422, code: 'COVENANT_PARAMS_INVALID', message: 'params is required: an object of the template\'s parameters' },
};

export const EnrolBody = Type.Object({
  recovery_public_key: Type.String({ maxLength: 4096, description: 'PEM Ed25519 public key (SPKI) of the owner\'s recovery key; usable after the 24-hour enrolment grace' }),
});

export const EnrolValidationCodes = {
  'body.recovery_public_key': { status: 422, code: 'COVENANT_PARAMS_INVALID', message: 'recovery_public_key is required: a PEM Ed25519 public key' },
};

const AgentId = Type.String({ pattern: UUID_PATTERN, description: 'The agent to recover' });
const AgentIdCode = { status: 422, code: 'INVALID_AGENT_ID', message: 'agent_id is required and must be a UUID' };

export const IntentBody = Type.Object({
  agent_id: AgentId,
  new_passport_public_key: Type.String({ maxLength: 4096, description: 'The passport key the agent will have after the recovery: PEM SPKI or base64 of the raw 32 bytes' }),
  challenge_id: ChallengeId,
  recovery_signature: signature('the recovery key (owner-recovery-key covenant; scheme svc.recovery.intent.v1, content {agent_id, new_passport_public_key})'),
  channel_code: Type.Optional(Type.String({ maxLength: 200, description: 'Channel covenant: the code svc delivered to the channel for this same request (ask without it first)' })),
});

export const IntentValidationCodes = {
  'body.agent_id': AgentIdCode,
  'body.new_passport_public_key': { status: 422, code: 'INVALID_PASSPORT_PUBLIC_KEY', message: 'new_passport_public_key is required: an Ed25519 public key (PEM SPKI or base64 of the raw 32 bytes)' },
};

export const InitiateBody = Type.Object({
  agent_id: AgentId,
  challenge_id: ChallengeId,
  recovery_signature: signature('the recovery key (owner-recovery-key intents; scheme svc.recovery.initiate.v1, content {agent_id})'),
  passport_signature: signature('the new passport key the intent names (channel intents; scheme svc.recovery.initiate.v1, content {agent_id})'),
});

export const InitiateValidationCodes = { 'body.agent_id': AgentIdCode };

export const CompleteBody = Type.Object({
  intent_id: Type.String({ maxLength: 64, description: 'The initiated intent' }),
  challenge_id: ChallengeId,
  recovery_signature: signature('the recovery key (owner-recovery-key intents; scheme svc.recovery.complete.v1, content {intent_id})'),
  passport_signature: signature('the new passport key the intent names (every intent; the same bytes)'),
});

export const VetoBody = Type.Object({
  intent_id: Type.String({ maxLength: 64, description: 'An open intent of your agent' }),
  challenge_id: ChallengeId,
  passport_signature: signature('your passport key (scheme svc.recovery.veto.v1, content {intent_id})'),
});

export const IntentsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Intents to list, newest first (default 20)' })),
});

export const TransferIntentBody = Type.Object({
  incoming_public_key: Type.String({ maxLength: 4096, description: 'The incoming custodian\'s Ed25519 public key (PEM SPKI or base64 of the raw 32 bytes): the passport key after the transfer' }),
  incoming_owner_identifier: Type.String({ minLength: 1, maxLength: 256, pattern: NOT_BLANK_PATTERN, description: 'The incoming custodian\'s owner identifier (the pair agent_name, owner_identifier stays unique)' }),
});

export const TransferIntentValidationCodes = {
  'body.incoming_public_key': { status: 422, code: 'INVALID_PASSPORT_PUBLIC_KEY', message: 'incoming_public_key is required: an Ed25519 public key' },
  'body.incoming_owner_identifier': { status: 422, code: 'INVALID_OWNER_IDENTIFIER', message: 'incoming_owner_identifier is required: 1 to 256 characters, not only whitespace or control characters' },
};

export const TransferCompleteBody = Type.Object({
  transfer_id: Type.String({ maxLength: 64, description: 'transfer_id from POST /v1/me/custody/transfer/intent' }),
  passport_signature: signature('the current passport key over sign_payload of the transfer intent (scheme svc.custody.transfer.v1)'),
});

// ---- responses ----

const Status = Type.String({ description: 'success' });

/** A covenant (covenants.ts view); the public read shows a recovery key by SHA-256 and a channel by host. */
export const CovenantView = Type.Object({
  covenant_id: Type.String(),
  template_id: Type.String({ description: TEMPLATES.join(', ') }),
  tier: Nullable(Type.String({ description: 'strong or weak' })),
  activation: Type.String({ description: 'active (a recovery can be proved through it) or none (stored only)' }),
  params: Type.Object({}, {
    additionalProperties: true,
    description: 'The stored params of the template: owner-recovery-key {recovery_key_sha256, veto_window_days}; channel {url, veto_window_days} '
      + '(the public read: {host, url_sha256, veto_window_days}); successor-later {successor_agent_id}; quorum-later {members, threshold}',
  }),
  bound_at: IsoTime(),
  bound_log_index: Nullable(Type.Integer({ description: 'The covenant.bound or covenant.amended trust log entry' })),
  recovery_key: Type.Optional(Type.Object({
    public_key: Type.Optional(Type.String({ description: 'PEM SPKI (the owner\'s read only)' })),
    sha256: Nullable(Type.String()),
    enrolled_at: IsoTime(),
    usable_from: IsoTime('The end of the 24-hour enrolment grace'),
    usable: Type.Boolean(),
  }, { description: 'owner-recovery-key covenants' })),
});

export const CovenantReadResponse = Type.Object({ status: Status, agent_id: Type.String(), covenant: Nullable(CovenantView, { description: 'null: no covenant bound' }) });

export const CovenantAmendResponse = Type.Object({
  status: Status,
  changed: Type.Boolean({ description: 'false: the covenant already said this; nothing was logged' }),
  previous_template_id: Type.Optional(Nullable(Type.String())),
  signed: Type.Optional(Type.Boolean({ description: 'The amend carried the passport\'s signature' })),
  covenant: CovenantView,
  channel_signing_secret: Type.Optional(Type.String({ description: 'channel: the HMAC secret of the codes svc delivers, shown once' })),
  channel_signing_notice: Type.Optional(Type.String()),
});

export const CovenantEnrolResponse = Type.Object({ status: Status, covenant: CovenantView });

/** A recovery intent (recovery.ts view): public. */
export const RecoveryIntentView = Type.Object({
  intent_id: Type.String(),
  agent_id: Type.String(),
  state: Type.String({ description: 'open, vetoed, initiated, completed or lapsed' }),
  tier: Type.String({ description: 'recovery_key or channel: what proved it' }),
  epoch: Type.Integer({ description: 'The custody epoch it would close' }),
  new_passport_public_key: Type.String({ description: 'PEM SPKI of the passport key after the recovery' }),
  new_passport_public_key_sha256: Type.String(),
  opened_at: IsoTime(),
  veto_deadline: IsoTime(),
  veto_window_open: Type.Boolean(),
  lapses_at: IsoTime(),
  vetoed_at: Nullable(IsoTime()),
  initiated_at: Nullable(IsoTime()),
  completed_at: Nullable(IsoTime()),
  staged_resurrection_until: Nullable(IsoTime()),
  opened_log_index: Type.Integer(),
  closed_log_index: Nullable(Type.Integer({ description: 'The veto or completion entry' })),
});

export const RecoveryIntentResponse = Type.Object({ status: Status, intent: RecoveryIntentView });

/** POST /v1/recovery/intent 202: a channel covenant's code was delivered; send the request again with it. */
export const ChannelCodeSent = Type.Object({
  status: Type.String({ description: 'channel_code_sent' }),
  agent_id: Type.String(),
  code_expires_at: IsoTime(),
  content_sha256: Type.String({ description: 'SHA-256 of the request\'s content {agent_id, new_passport_public_key} the code is bound to' }),
  next: Type.String(),
});

export const RecoveryIntentsResponse = Type.Object({
  status: Status, agent_id: Type.String(), intents: Type.Array(RecoveryIntentView, { description: 'Newest first' }), total: Type.Integer(),
});

const SigningChallenge = {
  challenge_id: Type.String(),
  challenge_nonce: Type.String(),
  expires_at: IsoTime('When the challenge expires'),
  scheme: Type.String(),
};

export const RecoveryInitiateResponse = Type.Object({
  status: Status,
  intent: RecoveryIntentView,
  completion: Type.Object({
    ...SigningChallenge,
    content: Type.Object({ intent_id: Type.String() }),
    content_sha256: Type.String(),
    sign_payload: Type.String({ description: 'The bytes to sign (UTF-8)' }),
    sign_payload_encoding: Type.String({ description: 'utf-8' }),
    signatures: Type.Object({
      recovery_signature: Type.Optional(Type.String({ description: 'Who signs: the recovery key (owner-recovery-key intents)' })),
      passport_signature: Type.String({ description: 'Who signs: the new passport key' }),
    }),
    complete_url: Type.String(),
  }),
});

const Rebirth = {
  status: Status,
  agent_id: Type.String(),
  api_key: Type.String({ description: 'The new root key, shown once' }),
  api_key_notice: Type.String(),
  epoch: Type.Object({ closed: Type.Integer(), opened: Type.Integer() }),
  passport: Type.Object({ did: Type.String(), public_key: Type.String({ description: 'PEM SPKI' }) }),
  scoped_keys_revoked: Type.Integer(),
};

export const RecoveryCompleteResponse = Type.Object({
  ...Rebirth,
  staged_resurrection_until: Nullable(IsoTime('After a channel recovery: the end of staged resurrection')),
  intent: RecoveryIntentView,
});

export const TransferIntentResponse = Type.Object({
  status: Status,
  transfer_id: Type.String(),
  agent_id: Type.String(),
  epoch: Type.Integer({ description: 'The custody epoch the transfer closes' }),
  ...SigningChallenge,
  content: Type.Object({ incoming_owner_identifier: Type.String(), incoming_public_key: Type.String({ description: 'PEM SPKI' }) }),
  content_sha256: Type.String(),
  sign_payload: Type.String({ description: 'The custody-transfer bytes the current passport signs (UTF-8)' }),
  sign_payload_encoding: Type.String({ description: 'utf-8' }),
  complete_url: Type.String(),
});

export const TransferCompleteResponse = Type.Object({
  ...Rebirth,
  transferred_at: IsoTime(),
  owner_identifier: Type.String({ description: 'The incoming custodian\'s' }),
  covenant_superseded: Nullable(Type.String({ description: 'The outgoing custodian\'s covenant, ended' })),
});
