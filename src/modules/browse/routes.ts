import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { agentOf } from '../../http/auth';
import type { EnvelopeBuilder } from '../../http/envelope';
import { BrowseBody, BrowseIdParams, BrowseIdValidationCodes, BrowseValidationCodes } from './schemas';
import type { BrowseService } from './service';

export const browseRoutes = (deps: { browse: BrowseService; envelope: EnvelopeBuilder }): FastifyPluginAsyncTypebox => async (app) => {
  const { browse, envelope } = deps;

  app.post('/v1/browse', {
    schema: { body: BrowseBody, summary: 'Fetch a public web page server-side and extract its title and text (static or dynamic)', tags: ['browse'] },
    config: { auth: 'key', validationCodes: BrowseValidationCodes },
  }, async (request) => {
    const a = agentOf(request);
    const r = await browse.browse({ agentId: a.agentId, tier: a.tier, createdAt: a.createdAt }, request.body);
    return { status: 'success', ...r.record, _svc: await envelope.build({ fields: { usage: r.usage } }) };
  });

  app.get('/v1/browse/:browse_id', {
    schema: { params: BrowseIdParams, summary: 'Re-read one of your logged browse results (no refetch, not metered)', tags: ['browse'] },
    config: { auth: 'key', validationCodes: BrowseIdValidationCodes },
  }, async (request) => {
    const record = await browse.get(agentOf(request).agentId, request.params.browse_id);
    return { status: 'success', ...record, _svc: await envelope.build() };
  });
};
