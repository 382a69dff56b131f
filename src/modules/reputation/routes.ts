import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { agentOf } from '../../http/auth';
import type { EnvelopeBuilder } from '../../http/envelope';
import { ApiError } from '../../http/errors';
import { notBlank } from '../../http/input-rules';
import { errorResponses } from '../../http/response-schemas';
import { isBlank } from '../../lib/text';
import { AgentIdParams } from '../identity/schemas';
import {
  DecisionBody, DecisionParams, DecisionResponse, DisputeBody, DisputeResponse, DisputeValidationCodes, HistoryQuery, HistoryResponse, InteractionBody,
  InteractionResponse, InteractionValidationCodes, INTERACTION_REF_TYPES,
} from './schemas';
import type { ReputationService } from './service';

/** ref_type: missing is INTERACTION_REF_TYPE_REQUIRED, any other wrong value INTERACTION_REF_INVALID (before the schema). */
function checkRef(body: unknown): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return; // the schema refuses it
  const b = body as Record<string, unknown>;
  if (b.ref_type === undefined || b.ref_type === null || b.ref_type === '') {
    throw new ApiError(422, 'INTERACTION_REF_TYPE_REQUIRED', `ref_type is required: one of ${INTERACTION_REF_TYPES.join(', ')}`, { field: 'body.ref_type' });
  }
  if (typeof b.ref_type !== 'string' || !(INTERACTION_REF_TYPES as readonly string[]).includes(b.ref_type)) {
    throw new ApiError(422, 'INTERACTION_REF_INVALID', `ref_type must be one of ${INTERACTION_REF_TYPES.join(', ')}`, { field: 'body.ref_type' });
  }
  if (typeof b.ref_id !== 'string' || isBlank(b.ref_id)) {
    throw new ApiError(422, 'INTERACTION_REF_INVALID', 'ref_id is required: a non-empty string (not only whitespace or control characters)', { field: 'body.ref_id' });
  }
}

export const reputationRoutes = (deps: { reputation: ReputationService; envelope: EnvelopeBuilder }): FastifyPluginAsyncTypebox => async (app) => {
  const { reputation, envelope } = deps;

  app.post('/v1/feedback/interaction', {
    schema: {
      body: InteractionBody, response: { 201: InteractionResponse, 200: InteractionResponse, ...errorResponses(403, 404, 422, 429) },
      summary: 'Rate an interaction with another agent (you are the rater); appended to the public trust log', tags: ['reputation'],
    },
    config: {
      auth: 'key', success: [201, 200], validationCodes: InteractionValidationCodes,
      errors: { 403: ['REPUTATION_SUBJECT_INELIGIBLE'], 404: ['SUBJECT_NOT_FOUND', 'RATER_NOT_FOUND'], 422: ['INTERACTION_REF_TYPE_REQUIRED', 'INTERACTION_REF_INVALID'], 429: ['INTERACTION_RATE_LIMITED'] },
      inputRules: [{ part: 'body', field: 'ref_type', required: true }, notBlank('body', 'ref_id')],
    },
    preValidation: async (request) => checkRef(request.body),
  }, async (request, reply) => {
    const r = await reputation.rate(agentOf(request).agentId, request.body);
    return reply.code(r.created ? 201 : 200).send({ status: 'success', duplicate: !r.created, ...r.event, _svc: await envelope.build() });
  });

  app.get('/v1/agents/:agent_id/reputation/history', {
    schema: {
      params: AgentIdParams, querystring: HistoryQuery, response: { 200: HistoryResponse, ...errorResponses(404, 422) },
      summary: 'Reputation of an agent per custody epoch; with include_events, its rated events (each with its trust log index)', tags: ['reputation'],
    },
    config: { auth: 'none', errors: { 404: ['AGENT_NOT_FOUND', 'EPOCH_NOT_FOUND'], 422: ['INVALID_CURSOR'] } },
  }, async (request) => ({
    status: 'success',
    ...await reputation.history(request.params.agent_id, {
      epoch: request.query.epoch, include_events: request.query.include_events, cursor: request.query.cursor, limit: request.query.limit ?? 20,
    }),
  }));

  app.post('/v1/reputation/dispute', {
    schema: {
      body: DisputeBody, response: { 201: DisputeResponse, ...errorResponses(403, 404, 409, 422, 429) },
      summary: 'Dispute a reputation event of which you are the subject (3 per UTC day); an admin decides', tags: ['reputation'],
    },
    config: {
      auth: 'key', success: [201], validationCodes: DisputeValidationCodes,
      errors: { 403: ['DISPUTE_NOT_SUBJECT'], 404: ['REPUTATION_EVENT_NOT_FOUND'], 409: ['DISPUTE_ALREADY_FILED'], 422: ['DISPUTE_REASON_INVALID'], 429: ['DISPUTE_RATE_LIMITED'] },
      inputRules: [notBlank('body', 'reason')],
    },
  }, async (request, reply) => {
    if (isBlank(request.body.reason)) throw new ApiError(422, 'DISPUTE_REASON_INVALID', 'reason must not be only whitespace or control characters', { field: 'body.reason' });
    const r = await reputation.dispute(agentOf(request).agentId, request.body);
    return reply.code(201).send({ status: 'success', ...r, _svc: await envelope.build() });
  });

  app.post('/admin/disputes/:dispute_id/decision', {
    schema: {
      params: DecisionParams, body: DecisionBody, response: { 200: DecisionResponse, ...errorResponses(404, 409) },
      summary: 'Decide a dispute (admin): upheld sets the event\'s weight to 0, dismissed leaves it; appended to the trust log', tags: ['admin'],
    },
    config: { auth: 'admin', errors: { 404: ['DISPUTE_NOT_FOUND'], 409: ['DISPUTE_ALREADY_DECIDED'] } },
  }, async (request) => ({ status: 'success', ...await reputation.decide(request.params.dispute_id, request.body) }));
};
