import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Static } from 'typebox';
import { performance } from 'node:perf_hooks';
import { agentOf } from '../../http/auth';
import type { EnvelopeBuilder } from '../../http/envelope';
import { SearchQuery, SearchResponse } from './schemas';
import type { SearchService } from './service';
import { notBlank } from '../../http/input-rules';

export const searchRoutes = (deps: { search: SearchService; envelope: EnvelopeBuilder }): FastifyPluginAsyncTypebox => async (app) => {
  const { search, envelope } = deps;

  app.get('/v1/search', {
    // A charged call: no automatic HEAD twin (it would charge and send nothing).
    exposeHeadRoute: false,
    schema: { querystring: SearchQuery, summary: 'Search the web; results carry credibility scores (0.5 to 1.0)', tags: ['search'], response: { 200: SearchResponse } },
    config: { auth: 'key', scope: 'svc:search', errors: { 402: ['INSUFFICIENT_CREDITS'], 429: ['SEARCH_CALLS_LIMIT'], 502: ['SEARCH_PROVIDER_ERROR'], 503: ['SEARCH_PROVIDER_UNCONFIGURED'], 504: ['SEARCH_PROVIDER_TIMEOUT'] }, inputRules: [notBlank('querystring', 'q')] },
  }, async (request, reply) => {
    const started = performance.now();
    const a = agentOf(request);
    // A client that hangs up stops the provider call (and gets its call back): nobody waits for it.
    // Set up only when a provider is asked; a cache hit needs none.
    let gone: AbortController | undefined;
    const onClose = () => {
      if (!reply.raw.writableFinished) gone?.abort();
    };
    const signal = () => {
      if (!gone) {
        gone = new AbortController();
        // Already gone while the call was being charged: cancel at once.
        if (request.raw.socket?.destroyed) gone.abort();
        else reply.raw.once('close', onClose);
      }
      return gone.signal;
    };
    const r = await search.search({ agentId: a.agentId, tier: a.tier }, request.query.q, request.query.num_results ?? 10, signal)
      .finally(() => { if (gone) reply.raw.off('close', onClose); });
    const head = { status: 'success', query: r.query, provider_used: r.provider_used };
    const tail = {
      usage: r.usage,
      cached: r.cached,
      response_time_ms: Math.round(performance.now() - started),
      _svc: await envelope.build({ fields: { search_id: r.search_id, usage: r.svcUsage } }),
    };
    // The results are already JSON (serialised once per cached answer): spliced in between the
    // fields before and after them, in the same order as an object would serialise. A string with a
    // JSON content type is sent as it is.
    reply.type('application/json; charset=utf-8');
    const json = `${JSON.stringify(head).slice(0, -1)},"results":${r.resultsJson},${JSON.stringify(tail).slice(1)}`;
    return json as unknown as Static<typeof SearchResponse>;
  });
};
