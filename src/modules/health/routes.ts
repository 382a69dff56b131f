import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sql, type Kysely } from 'kysely';
import { SVC_VERSION } from '../../version';

/** GET /health: liveness plus a database round trip; 503 when the database does not answer. */
export const healthRoutes = (deps: { db: Kysely<any>; engine: string }): FastifyPluginAsyncTypebox => async (app) => {
  app.get('/health', { schema: { summary: 'Health probe: status and version' }, config: { auth: 'none' } }, async (_req, reply) => {
    try {
      await sql`select 1`.execute(deps.db);
      return { status: 'ok', version: SVC_VERSION, database: deps.engine };
    } catch {
      return reply.code(503).send({ status: 'degraded', version: SVC_VERSION, database: deps.engine, error_code: 'DATABASE_UNAVAILABLE', message: 'The database did not answer' });
    }
  });
};
