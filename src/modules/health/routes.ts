import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sql, type Kysely } from 'kysely';
import type { Clock } from '../../lib/clock';
import type { Database } from '../../infra/db/schema';
import { readBacklog } from '../../infra/vectors/indexer';
import type { VectorRuntime } from '../../infra/vectors/runtime';
import { SVC_VERSION } from '../../version';
import { Type } from 'typebox';
import { IsoTime, Nullable } from '../../http/response-schemas';

const HealthFields = {
  version: Type.String(),
  database: Type.String({ description: 'sqlite or postgres' }),
};
const HealthOk = Type.Object({
  status: Type.String({ description: 'ok' }),
  ...HealthFields,
  redis: Type.Optional(Type.String({ description: 'With REDIS_URL: ok or unavailable (svc still serves without it)' })),
  embeddings: Type.String({
    description: 'The embedding model: none (no embeddings configured), remote (an embeddings server), or a model run in this process: cold (loads with the first text to embed), loading, ready',
  }),
  warming: Type.Array(Type.String(), {
    description: 'Components loading in the background right now (e.g. embeddings); svc answers meanwhile, and a search made before they are ready finds by words (pending_embeddings says what is not yet searchable by meaning)',
  }),
}, { description: 'Serving: the database answered' });
/** 503: the database did not answer; the shared error body's fields with the probe's own. */
const HealthDegraded = Type.Object({ status: Type.String({ description: 'degraded' }), ...HealthFields, error_code: Type.String(), message: Type.String() }, { description: 'Degraded: the database did not answer (DATABASE_UNAVAILABLE)' });
const VectorsBacklog = Type.Object({
  embeddings: Nullable(Type.Object({ model_id: Type.String(), dimensions: Type.Integer() }), { description: 'null: no embeddings configured' }),
  collections: Type.Array(Type.Object({
    collection: Type.String(), pending: Type.Integer(), set_aside: Type.Integer(), oldest_pending_at: Nullable(IsoTime()), next_retry_at: Nullable(IsoTime()),
  })),
  set_aside_items: Type.Array(Type.Object({
    collection: Type.String(), owner_id: Type.String(), item_id: Type.String(), refusals: Type.Integer(), retry_at: Nullable(IsoTime()),
  })),
}, { description: 'The embeddings model and the vector outbox: pending and set-aside items' });

/**
 * GET /health: liveness plus a database round trip; 503 when the database does not answer. It says
 * whether the embedding model is loaded (`embeddings`: cold until the first text to embed, then
 * loading, then ready) and lists what is warming up (`warming`): svc answers before the model is
 * loaded, so start-up does not wait for it. With
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
  app.get('/health', { schema: { summary: 'Health probe: status and version', response: { 200: HealthOk, 503: HealthDegraded } }, config: { auth: 'none', errors: { 503: ['DATABASE_UNAVAILABLE'] } } }, async (_req, reply) => {
    try {
      await sql`select 1`.execute(deps.db);
      const redis = deps.redis?.();
      const embedder = deps.vectors.embedder;
      const embeddings = !embedder ? 'none' : embedder.warmth?.() ?? 'remote';
      return {
        status: 'ok', version: SVC_VERSION, database: deps.engine, ...(redis && redis !== 'in-process' ? { redis } : {}),
        embeddings, warming: embeddings === 'loading' ? ['embeddings'] : [],
      };
    } catch {
      return reply.code(503).send({ status: 'degraded', version: SVC_VERSION, database: deps.engine, error_code: 'DATABASE_UNAVAILABLE', message: 'The database did not answer' });
    }
  });

  app.get('/admin/vectors', { schema: { summary: 'Vector indexing backlog and refused texts (admin)', response: { 200: VectorsBacklog } }, config: { auth: 'admin' } }, async () => {
    const e = deps.vectors.embedder;
    return {
      embeddings: e ? { model_id: e.modelId, dimensions: e.dimensions } : null,
      ...(await readBacklog(deps.db as Kysely<Database>, deps.clock.now())),
    };
  });
};
