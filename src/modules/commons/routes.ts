import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { agentOf } from '../../http/auth';
import type { RateLimiter } from '../../infra/limits';
import { memoryRateLimit } from '../memory/rate-limit';
import { errorResponses } from '../../http/response-schemas';
import {
  DeleteResponse, EntryIdParams, EntryResponse, ListQuery, ListResponse, PublishBody, PublishResponse, PublishValidationCodes, SearchQuery, SearchResponse,
  SearchValidationCodes, VouchResponse,
} from './schemas';
import type { CommonsService } from './service';
import { searchQuery } from '../../http/input-rules';

export interface CommonsRouteDeps {
  commons: CommonsService;
  limiter: RateLimiter;
  ratePerMinute: number;
  bodyLimitBytes: number;
  upgradeUrl?: string;
}

/** /v1/commons routes (all need a key; reads are not metered). Bodies: docs/memory.md, "Commons". */
export const commonsRoutes = (deps: CommonsRouteDeps): FastifyPluginAsyncTypebox => async (app) => {
  const { commons } = deps;
  app.addHook('preValidation', memoryRateLimit(deps.limiter, deps.ratePerMinute, 'commons', deps.upgradeUrl));
  const tags = ['commons'];

  app.post('/v1/commons/entries', {
    bodyLimit: deps.bodyLimitBytes,
    schema: { body: PublishBody, summary: 'Publish an entry to the shared commons (needs svc:commons-publish)', tags, response: { 201: PublishResponse, ...errorResponses(403, 413, 422, 429) } },
    config: { auth: 'key', scope: 'svc:commons-publish', success: [201], stagedRestricted: 'commons_write', errors: { 403: ['COMMONS_PUBLISH_NOT_PERMITTED', 'STAGED_RESURRECTION_RESTRICTED'], 413: ['COMMONS_VALUE_TOO_LARGE'], 429: ['RATE_LIMIT_EXCEEDED'] }, validationCodes: PublishValidationCodes },
  }, async (request, reply) => reply.code(201).send(await commons.publish(agentOf(request), request.body)));

  app.get('/v1/commons/entries', {
    schema: { querystring: ListQuery, summary: 'List commons entries, newest first (no credit debit)', tags, response: { 200: ListResponse, ...errorResponses(429) } },
    config: { auth: 'key', scope: 'svc:commons-read', errors: { 429: ['RATE_LIMIT_EXCEEDED'] } },
  }, async (request) => commons.list(request.query));

  app.get('/v1/commons/search', {
    schema: { querystring: SearchQuery, summary: 'Semantic search over the commons', tags, response: { 200: SearchResponse, ...errorResponses(422, 429, 503) } },
    config: { auth: 'key', scope: 'svc:commons-read', errors: { 422: ['COMMONS_QUERY_REQUIRED'], 429: ['RATE_LIMIT_EXCEEDED'], 503: ['COMMONS_SEARCH_UNAVAILABLE'] }, validationCodes: SearchValidationCodes, inputRules: [searchQuery] },
  }, async (request) => commons.search(request.query));

  app.get('/v1/commons/entries/:entry_id', {
    schema: { params: EntryIdParams, summary: 'Read one commons entry', tags, response: { 200: EntryResponse, ...errorResponses(404, 429) } },
    config: { auth: 'key', scope: 'svc:commons-read', errors: { 404: ['COMMONS_ENTRY_NOT_FOUND'], 429: ['RATE_LIMIT_EXCEEDED'] } },
  }, async (request) => commons.get(request.params.entry_id));

  app.post('/v1/commons/entries/:entry_id/vouch', {
    schema: { params: EntryIdParams, summary: 'Vouch for a commons entry (once per agent; not your own)', tags, response: { 200: VouchResponse, ...errorResponses(403, 404, 429) } },
    config: { auth: 'key', scope: 'svc:commons-publish', stagedRestricted: 'commons_write', errors: { 403: ['COMMONS_SELF_VOUCH', 'STAGED_RESURRECTION_RESTRICTED'], 404: ['COMMONS_ENTRY_NOT_FOUND'], 429: ['RATE_LIMIT_EXCEEDED'] } },
  }, async (request) => commons.vouch(agentOf(request).agentId, request.params.entry_id));

  app.delete('/v1/commons/entries/:entry_id', {
    schema: { params: EntryIdParams, summary: 'Delete your own commons entry', tags, response: { 200: DeleteResponse, ...errorResponses(403, 404, 429) } },
    config: { auth: 'key', scope: 'svc:commons-publish', stagedRestricted: 'commons_write', errors: { 403: ['COMMONS_NOT_PUBLISHER', 'STAGED_RESURRECTION_RESTRICTED'], 404: ['COMMONS_ENTRY_NOT_FOUND'], 429: ['RATE_LIMIT_EXCEEDED'] } },
  }, async (request) => commons.remove(agentOf(request).agentId, request.params.entry_id));
};
