import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Static } from 'typebox';
import { agentOf } from '../../http/auth';
import { ActivityQuery, ActivityResponse, ActivityValidationCodes, UsageResponse } from './schemas';
import type { UsageService } from './service';

export const usageRoutes = (deps: { usage: UsageService }): FastifyPluginAsyncTypebox => async (app) => {
  const { usage } = deps;

  app.get('/v1/usage', {
    schema: { summary: 'Usage history: metered calls this UTC month, what remains, and a 7-day daily breakdown', tags: ['usage'], response: { 200: UsageResponse } },
    config: { auth: 'key', scope: 'any' },
  }, async (request) => {
    const a = agentOf(request);
    return usage.history(a.agentId, a.tier);
  });

  app.get('/v1/me/activity', {
    schema: { querystring: ActivityQuery, summary: 'Your activity feed: browses (without page text), feedback and approval events, newest first', tags: ['usage'], response: { 200: ActivityResponse } },
    config: { auth: 'key', scope: 'any', errors: { 400: ['INVALID_ACTIVITY_CURSOR'] }, validationCodes: ActivityValidationCodes },
  }, async (request) => {
    const a = agentOf(request);
    const q = request.query;
    // Each item's kind names the property its fields are under (the feed's type says a string key).
    return usage.activity(a.agentId, { limit: q.limit ?? 20, cursor: q.cursor, kinds: q.kinds?.split(',') }) as unknown as Promise<Static<typeof ActivityResponse>>;
  });
};
