/** Builds the commons module for app.ts; shares memory's rate limiter (its own per-agent budget) and the vector runtime. */
import type { Config } from '../../config';
import type { DatabaseHandle } from '../../infra/db/database';
import type { RateLimiter } from '../../infra/limits';
import type { VectorRuntime } from '../../infra/vectors/runtime';
import type { Clock } from '../../lib/clock';
import { commonsRoutes } from './routes';
import { COMMONS_COLLECTION, COMMONS_OWNER, createCommonsService } from './service';
import { createCommonsStore } from './store';
import { createLexicalIndex } from '../../infra/lexical';

export function createCommonsModule(deps: { config: Config; database: DatabaseHandle; clock: Clock; limiter: RateLimiter; vectors?: VectorRuntime; log?: (msg: string, err?: unknown) => void }) {
  const { config } = deps;
  const upgradeUrl = config.billing.billingPageUrl ?? `${config.core.baseUrl}/billing`;
  const store = createCommonsStore(deps.database.db, deps.database.sqlite);
  const service = createCommonsService({
    store,
    clock: deps.clock,
    upgradeUrl,
    embedder: deps.vectors?.embedder,
    index: deps.vectors?.index,
    indexer: deps.vectors?.indexer,
    lexical: deps.vectors?.lexical ?? createLexicalIndex(deps.database),
    db: deps.database.db,
    catchUpMs: deps.vectors?.catchUpMs,
  });
  void service.backfillLexical().catch((e) => deps.log?.('commons lexical indexing could not be completed', e));
  const indexer = deps.vectors?.indexer;
  if (indexer) {
    indexer.addSource(COMMONS_COLLECTION, service.textSource());
    // A new model (or vectors lost) → queue the entries that need (re-)embedding, as memory does.
    const stale = (modelId: string, limit: number) => store.entriesNeedingVectors(modelId, COMMONS_OWNER, limit)
      .then((ids) => ids.map((itemId) => ({ ownerId: COMMONS_OWNER, itemId })));
    indexer.enqueueStale(COMMONS_COLLECTION, stale).catch((e) => deps.log?.('commons re-embedding could not be queued', e));
  }
  return {
    service,
    routes: commonsRoutes({
      commons: service, limiter: deps.limiter, ratePerMinute: config.memory.memoryRatePerMinute, bodyLimitBytes: config.memory.memoryBodyLimitBytes, upgradeUrl,
    }),
  };
}
