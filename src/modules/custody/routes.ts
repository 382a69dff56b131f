import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { agentOf } from '../../http/auth';
import { ApiError } from '../../http/errors';
import { errorResponses } from '../../http/response-schemas';
import { isUuid } from '../../lib/ids';
import { SIGNED_REQUEST_ERRORS } from '../identity/signatures';
import { AgentIdParams } from '../identity/schemas';
import type { Covenants } from './covenants';
import type { Recovery } from './recovery';
import {
  AmendBody, AmendValidationCodes, ChannelCodeSent, CompleteBody, CovenantAmendResponse, CovenantEnrolResponse, CovenantReadResponse, EnrolBody,
  EnrolValidationCodes, InitiateBody, InitiateValidationCodes, IntentBody, IntentsQuery, IntentValidationCodes, RecoveryCompleteResponse,
  RecoveryInitiateResponse, RecoveryIntentResponse, RecoveryIntentsResponse, TransferCompleteBody, TransferCompleteResponse, TransferIntentBody,
  TransferIntentResponse, TransferIntentValidationCodes, VetoBody,
} from './schemas';
import type { Transfers } from './transfer';

/** The signed-request codes plus a route's own, merged per status. */
const withSigned = (own: Record<number, string[]>): Record<number, string[]> => {
  const out: Record<number, string[]> = {};
  for (const [status, codes] of [...Object.entries(SIGNED_REQUEST_ERRORS), ...Object.entries(own)]) {
    out[Number(status)] = [...new Set([...(out[Number(status)] ?? []), ...codes])];
  }
  return out;
};

const agentParam = (id: string) => {
  if (!isUuid(id)) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this agent_id');
  return id.toLowerCase();
};

const tags = ['custody'];

export const custodyRoutes = (deps: { covenants: Covenants; recovery: Recovery; transfers: Transfers; agentExists: (id: string) => Promise<boolean> }): FastifyPluginAsyncTypebox => async (app) => {
  const { covenants, recovery, transfers } = deps;

  // ---- covenants ----
  app.get('/v1/me/covenant', {
    schema: {
      response: { 200: CovenantReadResponse },
      summary: 'Your covenant (root key): template, params, recovery key and its enrolment grace; null when none is bound', tags,
    },
    config: { auth: 'root' },
  }, async (request) => ({ status: 'success', ...await covenants.read(agentOf(request).agentId, false) }));

  app.get('/v1/agents/:agent_id/covenant', {
    schema: {
      params: AgentIdParams, response: { 200: CovenantReadResponse, ...errorResponses(404) },
      summary: 'An agent\'s covenant (public): template and public params (a recovery key by SHA-256, a channel by host); null when none', tags,
    },
    config: { auth: 'none', errors: { 404: ['AGENT_NOT_FOUND'] } },
  }, async (request) => {
    const id = agentParam(request.params.agent_id);
    if (!(await deps.agentExists(id))) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this agent_id');
    return { status: 'success', ...await covenants.read(id, true) };
  });

  app.post('/v1/me/covenant/amend', {
    schema: {
      body: AmendBody, response: { 200: CovenantAmendResponse, ...errorResponses(401, 403, 404, 409, 422) },
      summary: 'Bind or change your covenant (root key; the passport signs svc.covenant.amend.v1 when the agent is staked, sponsoring or established); a trust log entry', tags,
    },
    config: {
      auth: 'root', validationCodes: AmendValidationCodes,
      errors: withSigned({ 403: ['COVENANT_AMEND_FORBIDDEN', 'COVENANT_DOWNGRADE_FORBIDDEN'], 422: ['COVENANT_TEMPLATE_INVALID', 'COVENANT_PARAMS_INVALID'] }),
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store'); // a channel's signing secret is shown once
    return covenants.amend(agentOf(request).agentId, request.body);
  });

  app.post('/v1/me/covenant/enrol', {
    schema: {
      body: EnrolBody, response: { 201: CovenantEnrolResponse, ...errorResponses(409, 410, 422) },
      summary: `Legacy enrolment of an owner-recovery-key covenant (root key), open until 2026-11-15T00:00:00Z; proves current control, not ownership at registration`, tags,
    },
    config: { auth: 'root', success: [201], validationCodes: EnrolValidationCodes, errors: { 409: ['COVENANT_ALREADY_ENROLLED'], 410: ['LEGACY_COVENANT_ENROL_CLOSED'], 422: ['COVENANT_PARAMS_INVALID'] } },
  }, async (request, reply) => reply.code(201).send(await covenants.enrol(agentOf(request).agentId, request.body)));

  // ---- recovery ----
  const recoveryErrors = withSigned({
    401: ['RECOVERY_CHANNEL_CODE_INVALID'], 404: ['AGENT_NOT_FOUND'], 409: ['RECOVERY_INTENT_ALREADY_OPEN', 'RECOVERY_COVENANT_REQUIRED'],
    422: ['INVALID_PASSPORT_PUBLIC_KEY'], 429: ['RECOVERY_RATE_LIMITED'], 502: ['RECOVERY_CHANNEL_DELIVERY_FAILED'],
  });
  app.post('/v1/recovery/intent', {
    schema: {
      body: IntentBody, response: { 201: RecoveryIntentResponse, 202: ChannelCodeSent, ...errorResponses(401, 403, 404, 409, 422, 429, 502) },
      summary: 'Open a public recovery intent naming a new passport key, proved with the recovery key (svc.recovery.intent.v1) or a code delivered through the channel; 7-day veto window', tags,
    },
    config: { auth: 'none', success: [201, 202], validationCodes: IntentValidationCodes, errors: recoveryErrors },
  }, async (request, reply) => {
    const r = await recovery.intent(request.ip, request.body);
    return reply.code(r.status).send(r.body);
  });

  app.get('/v1/agents/:agent_id/recovery/intents', {
    schema: {
      params: AgentIdParams, querystring: IntentsQuery, response: { 200: RecoveryIntentsResponse, ...errorResponses(404) },
      summary: 'An agent\'s recovery intents (public), newest first: state, veto deadline, the new key named', tags,
    },
    config: { auth: 'none', errors: { 404: ['AGENT_NOT_FOUND'] } },
  }, async (request) => ({ status: 'success', ...await recovery.list(agentParam(request.params.agent_id), request.query.limit ?? 20) }));

  app.post('/v1/me/recovery/veto', {
    schema: {
      body: VetoBody, response: { 200: RecoveryIntentResponse, ...errorResponses(401, 403, 404, 409, 422) },
      summary: 'Veto a recovery intent of your agent inside its 7-day window (root key and the passport\'s signature, svc.recovery.veto.v1)', tags,
    },
    config: { auth: 'root', errors: withSigned({ 404: ['RECOVERY_INTENT_NOT_FOUND'], 409: ['RECOVERY_VETO_WINDOW_CLOSED', 'RECOVERY_INTENT_VETOED'] }) },
  }, async (request) => recovery.veto(agentOf(request).agentId, request.body));

  app.post('/v1/recovery/initiate', {
    schema: {
      body: InitiateBody, response: { 200: RecoveryInitiateResponse, ...errorResponses(401, 403, 404, 409, 422, 429) },
      summary: 'Initiate the recovery of an agent whose intent\'s veto window passed unvetoed (signed again, svc.recovery.initiate.v1); returns the completion challenge', tags,
    },
    config: {
      auth: 'none', validationCodes: InitiateValidationCodes,
      errors: withSigned({ 404: ['AGENT_NOT_FOUND'], 409: ['RECOVERY_INTENT_REQUIRED', 'RECOVERY_VETO_WINDOW_ACTIVE', 'RECOVERY_INTENT_VETOED', 'RECOVERY_COVENANT_REQUIRED'], 429: ['RECOVERY_RATE_LIMITED'] }),
    },
  }, async (request) => recovery.initiate(request.ip, request.body));

  app.post('/v1/recovery/complete', {
    schema: {
      body: CompleteBody, response: { 200: RecoveryCompleteResponse, ...errorResponses(401, 403, 404, 409, 422, 429, 500) },
      summary: 'Complete an initiated recovery (svc.recovery.complete.v1): a rebirth; the new root key is returned once, every earlier key is revoked, a new custody epoch opens', tags,
    },
    config: {
      auth: 'none',
      errors: withSigned({
        404: ['RECOVERY_INTENT_NOT_FOUND'], 409: ['RECOVERY_INTENT_REQUIRED', 'RECOVERY_VETO_WINDOW_ACTIVE', 'RECOVERY_INTENT_VETOED', 'RECOVERY_REBIRTH_FAILED', 'RECOVERY_COVENANT_REQUIRED'],
        429: ['RECOVERY_RATE_LIMITED'], 500: ['RECOVERY_REBIRTH_FAILED'],
      }),
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store'); // the new root key
    return recovery.complete(request.ip, request.body);
  });

  // ---- custody transfer ----
  app.post('/v1/me/custody/transfer/intent', {
    schema: {
      body: TransferIntentBody, response: { 201: TransferIntentResponse, ...errorResponses(403, 409, 422) },
      summary: 'Start a custody transfer (root key): names the incoming custodian\'s public key and owner; returns a challenge and the canonical custody-transfer bytes (svc.custody.transfer.v1)', tags,
    },
    config: {
      auth: 'root', success: [201], validationCodes: TransferIntentValidationCodes,
      errors: { 403: ['PASSPORT_REVOKED', 'STAGED_RESURRECTION_RESTRICTED'], 409: ['RECOVERY_INTENT_ALREADY_OPEN', 'CUSTODY_TRANSFER_CONFLICT'], 422: ['INVALID_PASSPORT_PUBLIC_KEY', 'INVALID_OWNER_IDENTIFIER'] },
    },
  }, async (request, reply) => reply.code(201).send(await transfers.intent(agentOf(request).agentId, request.body)));

  app.post('/v1/me/custody/transfer/complete', {
    schema: {
      body: TransferCompleteBody, response: { 200: TransferCompleteResponse, ...errorResponses(401, 403, 404, 409, 422) },
      summary: 'Complete a custody transfer with the current passport\'s signature over its bytes (root key): a new custody epoch for the incoming custodian; the new root key is returned once', tags,
    },
    config: {
      auth: 'root',
      errors: withSigned({ 403: ['STAGED_RESURRECTION_RESTRICTED'], 404: ['CUSTODY_TRANSFER_NOT_FOUND'], 409: ['RECOVERY_INTENT_ALREADY_OPEN', 'CUSTODY_TRANSFER_CONFLICT'] }),
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store'); // the new root key
    return transfers.complete(agentOf(request).agentId, request.body);
  });
};
