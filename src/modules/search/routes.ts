import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { performance } from 'node:perf_hooks';
import { agentOf } from '../../http/auth';
import type { EnvelopeBuilder } from '../../http/envelope';
import { SearchQuery } from './schemas';
import type { SearchService } from './service';

export const searchRoutes = (deps: { search: SearchService; envelope: EnvelopeBuilder }): FastifyPluginAsyncTypebox => async (app) => {
  const { search, envelope } = deps;

  app.get('/v1/search', {
    schema: { querystring: SearchQuery, summary: 'Search the web; results carry credibility scores (0.5 to 1.0)', tags: ['search'] },
    config: { auth: 'key' },
  }, async (request, reply) => {
    const started = performance.now();
    const a = agentOf(request);
    // A client that hangs up stops the provider call (and gets its call back): nobody waits for it.
    const gone = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) gone.abort();
    };
    reply.raw.once('close', onClose);
    const r = await search.search({ agentId: a.agentId, tier: a.tier }, request.query.q, request.query.num_results ?? 10, gone.signal)
      .finally(() => reply.raw.off('close', onClose));
    return {
      status: 'success',
      query: r.query,
      provider_used: r.provider_used,
      results: r.results,
      usage: r.usage,
      cached: r.cached,
      response_time_ms: Math.round(performance.now() - started),
      _svc: await envelope.build({ fields: { search_id: r.search_id, usage: r.svcUsage } }),
    };
  });
};
