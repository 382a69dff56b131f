import { Type } from 'typebox';
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
