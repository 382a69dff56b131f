import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../http/errors';
import { errorResponses } from '../../http/response-schemas';
import { AgentIdParams } from '../identity/schemas';
import type { TrustAdmin } from './admin';
import type { TrustLog } from './log';
import type { createParity } from './parity';
import {
  AdoptionResponse, CheckpointNote, ConsistencyQuery, ConsistencyResponse, DecisionTraceResponse, EntriesQuery, EntriesResponse, InclusionQuery, InclusionResponse,
  ParityResponse, RangeValidationCodes, TrustLogKey,
} from './schemas';

const RANGE = { 422: ['TRUST_LOG_RANGE_INVALID'] };

export const trustRoutes = (deps: { log: TrustLog; admin: TrustAdmin; parity: ReturnType<typeof createParity> }): FastifyPluginAsyncTypebox => async (app) => {
  const { log, admin, parity } = deps;

  app.get('/v1/trust/log/checkpoint', {
    schema: { response: { 200: CheckpointNote }, summary: 'Latest signed checkpoint of the trust log (C2SP tlog-checkpoint in a signed note, text/plain)', tags: ['trust'] },
    config: { auth: 'none' },
  }, async (_request, reply) => reply.type('text/plain; charset=utf-8').header('cache-control', 'no-cache').send(await log.checkpoint()));

  app.get('/v1/trust/log/entries', {
    schema: { querystring: EntriesQuery, response: { 200: EntriesResponse, ...errorResponses(422) }, summary: 'Trust log entries [start, end) with their index, leaf hash and RFC 8785 bytes', tags: ['trust'] },
    config: { auth: 'none', errors: RANGE, validationCodes: RangeValidationCodes },
  }, async (request) => ({ status: 'success', ...await log.entries(request.query.start, request.query.end) }));

  app.get('/v1/trust/log/proof/inclusion', {
    schema: { querystring: InclusionQuery, response: { 200: InclusionResponse, ...errorResponses(422) }, summary: 'RFC 9162 inclusion proof of an entry in a tree size', tags: ['trust'] },
    config: { auth: 'none', errors: RANGE, validationCodes: RangeValidationCodes },
  }, async (request) => ({ status: 'success', ...await log.inclusion(request.query.index, request.query.tree_size) }));

  app.get('/v1/trust/log/proof/consistency', {
    schema: { querystring: ConsistencyQuery, response: { 200: ConsistencyResponse, ...errorResponses(422) }, summary: 'RFC 9162 consistency proof between two tree sizes', tags: ['trust'] },
    config: { auth: 'none', errors: RANGE, validationCodes: RangeValidationCodes },
  }, async (request) => ({ status: 'success', ...await log.consistency(request.query.first, request.query.second) }));

  app.get('/.well-known/svc-trust-log.json', {
    schema: { response: { 200: TrustLogKey }, summary: 'The trust log\'s origin and public key (C2SP verifier key and PEM)', tags: ['trust'] },
    config: { auth: 'none' },
  }, async () => ({ origin: log.origin, verifier_key: log.verifierKey, public_key: log.publicKeyPem, key_algorithm: 'ed25519', checkpoint_url: '/v1/trust/log/checkpoint' }));

  app.get('/admin/trust/decision-trace/:agent_id', {
    schema: { params: AgentIdParams, response: { 200: DecisionTraceResponse, ...errorResponses(404) }, summary: 'Each derived trust fact of an agent, the rule applied and the log entries behind it (admin)', tags: ['admin'] },
    config: { auth: 'admin', errors: { 404: ['AGENT_NOT_FOUND'] } },
  }, async (request) => ({ status: 'success', ...await admin.trace(request.params.agent_id) }));

  app.get('/admin/trust/parity-check', {
    schema: { response: { 200: ParityResponse }, summary: 'Replay the whole trust log into fresh projections and diff them with the stored ones (admin); the result is kept', tags: ['admin'] },
    config: { auth: 'admin' },
  }, async () => ({ status: 'success', ...await parity.run() }));

  app.get('/admin/trust/parity-check/latest', {
    schema: { response: { 200: ParityResponse, ...errorResponses(404) }, summary: 'The last parity check\'s result (admin)', tags: ['admin'] },
    config: { auth: 'admin', errors: { 404: ['PARITY_CHECK_NOT_RUN'] } },
  }, async () => {
    const latest = await parity.latest();
    if (!latest) throw new ApiError(404, 'PARITY_CHECK_NOT_RUN', 'No parity check has run yet: GET /admin/trust/parity-check runs one');
    // The stored result of an earlier run(): the same shape.
    return { status: 'success', ...(latest as Awaited<ReturnType<typeof parity.run>>) };
  });

  app.get('/admin/trust/adoption', {
    schema: { response: { 200: AdoptionResponse }, summary: 'Use of each trust feature (admin)', tags: ['admin'] },
    config: { auth: 'admin' },
  }, async () => ({ status: 'success', ...await admin.adoption() }));
};
