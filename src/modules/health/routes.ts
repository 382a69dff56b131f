import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sql, type Kysely } from 'kysely';
import type { Clock } from '../../lib/clock';
import type { Database } from '../../infra/db/schema';
import { readBacklog } from '../../infra/vectors/indexer';
import type { VectorRuntime } from '../../infra/vectors/runtime';
import { SVC_VERSION } from '../../version';

/**
 * GET /health: liveness plus a database round trip; 503 when the database does not answer. With
 * REDIS_URL set, `redis` says whether it is connected: without it svc still serves (rate limits let
 * requests through, the search cache misses), so the status stays ok and the field tells the operator.
 *
 * GET /admin/vectors (X-Admin-Key): the embeddings model and what waits in the vector outbox, above
 * all the items whose text the model refused (set aside, retried later), which otherwise only the
 * log shows.
 */
export const healthRoutes = (deps: {
  db: Kysely<any>;
  engine: string;
  clock: Clock;
  vectors: Pick<VectorRuntime, 'embedder'>;
  redis?: () => 'in-process' | 'ok' | 'unavailable';
}): FastifyPluginAsyncTypebox => async (app) => {
  app.get('/health', { schema: { summary: 'Health probe: status and version' }, config: { auth: 'none', errors: { 503: ['DATABASE_UNAVAILABLE'] } } }, async (_req, reply) => {
    try {
      await sql`select 1`.execute(deps.db);
      const redis = deps.redis?.();
      return { status: 'ok', version: SVC_VERSION, database: deps.engine, ...(redis && redis !== 'in-process' ? { redis } : {}) };
    } catch {
      return reply.code(503).send({ status: 'degraded', version: SVC_VERSION, database: deps.engine, error_code: 'DATABASE_UNAVAILABLE', message: 'The database did not answer' });
    }
  });

  app.get('/admin/vectors', { schema: { summary: 'Vector indexing backlog and refused texts (admin)' }, config: { auth: 'admin' } }, async () => {
    const e = deps.vectors.embedder;
    return {
      embeddings: e ? { model_id: e.modelId, dimensions: e.dimensions } : null,
      ...(await readBacklog(deps.db as Kysely<Database>, deps.clock.now())),
    };
  });
};
