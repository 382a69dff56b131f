import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { agentOf } from '../../http/auth';
import type { EnvelopeBuilder } from '../../http/envelope';
import { BrowseBody, BrowseIdParams, BrowseIdValidationCodes, BrowseResponse, BrowseValidationCodes } from './schemas';
import type { BrowseService } from './service';

export const browseRoutes = (deps: { browse: BrowseService; envelope: EnvelopeBuilder }): FastifyPluginAsyncTypebox => async (app) => {
  const { browse, envelope } = deps;

  app.post('/v1/browse', {
    schema: { body: BrowseBody, summary: 'Fetch a public web page server-side and extract its title and text (static or dynamic)', tags: ['browse'], response: { 200: BrowseResponse } },
    config: { auth: 'key', scope: 'svc:browse', errors: { 402: ['INSUFFICIENT_CREDITS'], 403: ['BROWSE_DYNAMIC_TRUST_TIER'], 413: ['BROWSE_RESPONSE_TOO_LARGE'], 422: ['INVALID_URL', 'BROWSE_URL_BLOCKED', 'BROWSE_ROBOTS_DISALLOW', 'BROWSE_MODE_UNSUPPORTED'], 429: ['BROWSE_LIMIT'], 502: ['BROWSE_PROVIDER_ERROR'], 503: ['BROWSE_PROVIDER_UNCONFIGURED'], 504: ['BROWSE_PROVIDER_TIMEOUT'] }, validationCodes: BrowseValidationCodes },
  }, async (request) => {
    const a = agentOf(request);
    const r = await browse.browse({ agentId: a.agentId, tier: a.tier, createdAt: a.createdAt }, request.body);
    return { status: 'success', ...r.record, _svc: await envelope.build({ fields: { usage: r.usage } }) };
  });

  app.get('/v1/browse/:browse_id', {
    schema: { params: BrowseIdParams, summary: 'Re-read one of your logged browse results (no refetch, not metered)', tags: ['browse'], response: { 200: BrowseResponse } },
    config: { auth: 'key', scope: 'svc:browse', errors: { 404: ['BROWSE_NOT_FOUND'] }, validationCodes: BrowseIdValidationCodes },
  }, async (request) => {
    const record = await browse.get(agentOf(request).agentId, request.params.browse_id);
    return { status: 'success', ...record, _svc: await envelope.build() };
  });
};
