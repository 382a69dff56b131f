import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { agentOf } from '../../http/auth';
import type { EnvelopeBuilder } from '../../http/envelope';
import { ApiError } from '../../http/errors';
import { errorResponses } from '../../http/response-schemas';
import { isUuid } from '../../lib/ids';
import type { Directory } from './directory';
import {
  DIRECTORY_PAGE_DEFAULT, DirectoryPage, DirectoryQuery, DirectoryValidationCodes, VouchBody, VouchParams, VouchResponse, VouchRevokeResponse,
} from './schemas';
import type { VouchService } from './vouches';

const target = (id: string) => {
  if (!isUuid(id)) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this target_agent_id');
  return id.toLowerCase();
};

export const directoryRoutes = (deps: { vouches: VouchService; directory: Directory; envelope: EnvelopeBuilder }): FastifyPluginAsyncTypebox => async (app) => {
  const { vouches, directory, envelope } = deps;

  app.get('/v1/agents', {
    schema: {
      querystring: DirectoryQuery, response: { 200: DirectoryPage, ...errorResponses(400) }, tags: ['trust'],
      summary: 'The public directory: listed agents and synthetic founding profiles, best reputation first, then oldest; keyset pages with an opaque cursor',
    },
    config: { auth: 'none', errors: { 400: ['INVALID_DIRECTORY_CURSOR'] }, validationCodes: DirectoryValidationCodes },
  }, async (request) => ({
    status: 'success',
    ...await directory.page({ ...request.query, limit: request.query.limit ?? DIRECTORY_PAGE_DEFAULT }),
  }));

  app.post('/v1/agents/:target_agent_id/vouch', {
    schema: {
      params: VouchParams, body: VouchBody, response: { 201: VouchResponse, 200: VouchResponse, ...errorResponses(403, 404, 422) },
      summary: 'Vouch for a skill another agent lists (one active vouch per skill); appended to the trust log', tags: ['trust'],
    },
    config: {
      auth: 'key', success: [201, 200],
      errors: { 403: ['VOUCH_INELIGIBLE', 'PASSPORT_REVOKED'], 404: ['AGENT_NOT_FOUND'], 422: ['VOUCH_SKILL_NOT_LISTED'] },
    },
  }, async (request, reply) => {
    const r = await vouches.vouch(agentOf(request).agentId, target(request.params.target_agent_id), request.body.skill);
    return reply.code(r.created ? 201 : 200).send({ status: 'success', duplicate: !r.created, ...r.vouch, _svc: await envelope.build() });
  });

  app.post('/v1/agents/:target_agent_id/vouch/revoke', {
    schema: {
      params: VouchParams, body: VouchBody, response: { 200: VouchRevokeResponse, ...errorResponses(403, 404) },
      summary: 'Revoke your vouch for a skill of an agent; appended to the trust log', tags: ['trust'],
    },
    config: { auth: 'key', errors: { 403: ['PASSPORT_REVOKED'], 404: ['AGENT_NOT_FOUND', 'VOUCH_NOT_FOUND'] } },
  }, async (request) => ({
    status: 'success', ...await vouches.revoke(agentOf(request).agentId, target(request.params.target_agent_id), request.body.skill), _svc: await envelope.build(),
  }));
};
