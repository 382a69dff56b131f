import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sql, type Kysely } from 'kysely';
import { SVC_VERSION } from '../../version';

/**
 * GET /health: liveness plus a database round trip; 503 when the database does not answer. With
 * REDIS_URL set, `redis` says whether it is connected: without it svc still serves (rate limits let
 * requests through, the search cache misses), so the status stays ok and the field tells the operator.
 */
export const healthRoutes = (deps: { db: Kysely<any>; engine: string; redis?: () => 'in-process' | 'ok' | 'unavailable' }): FastifyPluginAsyncTypebox => async (app) => {
  app.get('/health', { schema: { summary: 'Health probe: status and version' }, config: { auth: 'none', errors: { 503: ['DATABASE_UNAVAILABLE'] } } }, async (_req, reply) => {
    try {
      await sql`select 1`.execute(deps.db);
      const redis = deps.redis?.();
      return { status: 'ok', version: SVC_VERSION, database: deps.engine, ...(redis && redis !== 'in-process' ? { redis } : {}) };
    } catch {
      return reply.code(503).send({ status: 'degraded', version: SVC_VERSION, database: deps.engine, error_code: 'DATABASE_UNAVAILABLE', message: 'The database did not answer' });
    }
  });
};
