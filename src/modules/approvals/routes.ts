import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { agentOf } from '../../http/auth';
import type { EnvelopeBuilder } from '../../http/envelope';
import { errorResponses } from '../../http/response-schemas';
import {
  ApprovalBody, ApprovalListQuery, ApprovalListValidationCodes, ApprovalPage, ApprovalRecorded, ApprovalValidationCodes, MAX_NOTE_CHARS,
} from './schemas';
import type { ApprovalService } from './service';

export const approvalRoutes = (deps: { approvals: ApprovalService; envelope: EnvelopeBuilder }): FastifyPluginAsyncTypebox => async (app) => {
  const { approvals, envelope } = deps;

  app.post('/v1/me/approval-events', {
    schema: {
      body: ApprovalBody, response: { 201: ApprovalRecorded, ...errorResponses(422, 429) },
      summary: 'Record a human-approval event (approved or denied; append-only, declared not verified; monthly cap per tier)', tags: ['usage'],
    },
    config: {
      auth: 'key', scope: 'any', success: [201],
      errors: { 422: ['INVALID_APPROVAL_ACTION', 'INVALID_APPROVAL_DECISION', 'INVALID_DECIDED_AT', 'NOTE_TOO_LONG'], 429: ['APPROVAL_EVENTS_LIMIT'] },
      validationCodes: ApprovalValidationCodes,
      // The note is the only field without a schema length (it is counted in code points by the
      // service): a body past the size limit carries a note far past its 500 characters.
      bodyTooLarge: { status: 422, code: 'NOTE_TOO_LONG', message: `The request body is over the size limit; a note is at most ${MAX_NOTE_CHARS} characters` },
    },
  }, async (request, reply) => {
    const a = agentOf(request);
    const event = await approvals.record({ agentId: a.agentId, tier: a.tier }, request.body);
    return reply.code(201).send({ status: 'success', ...event, _svc: await envelope.build() });
  });

  app.get('/v1/me/approval-events', {
    schema: {
      querystring: ApprovalListQuery, response: { 200: ApprovalPage, ...errorResponses(400) },
      summary: 'Your approval events, newest first, with this UTC month\'s cap', tags: ['usage'],
    },
    config: { auth: 'key', scope: 'any', errors: { 400: ['INVALID_APPROVAL_CURSOR'] }, validationCodes: ApprovalListValidationCodes },
  }, async (request) => {
    const a = agentOf(request);
    const q = request.query;
    return approvals.list({ agentId: a.agentId, tier: a.tier }, { limit: q.limit ?? 20, cursor: q.cursor, decision: q.decision });
  });
};
