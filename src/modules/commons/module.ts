/** Builds the commons module for app.ts; shares memory's rate limiter (its own per-agent budget) and the vector runtime. */
import type { Config } from '../../config';
import type { DatabaseHandle } from '../../infra/db/database';
import type { RateLimiter } from '../../infra/limits';
import type { VectorRuntime } from '../../infra/vectors/runtime';
import type { Clock } from '../../lib/clock';
import { commonsRoutes } from './routes';
import { COMMONS_COLLECTION, createCommonsService } from './service';
import { createCommonsStore } from './store';

export function createCommonsModule(deps: { config: Config; database: DatabaseHandle; clock: Clock; limiter: RateLimiter; vectors?: VectorRuntime }) {
  const { config } = deps;
  const upgradeUrl = config.billing.billingPageUrl ?? `${config.core.baseUrl}/billing`;
  const service = createCommonsService({
    store: createCommonsStore(deps.database.db, deps.database.sqlite),
    clock: deps.clock,
    upgradeUrl,
    embedder: deps.vectors?.embedder,
    index: deps.vectors?.index,
    indexer: deps.vectors?.indexer,
  });
  deps.vectors?.indexer?.addSource(COMMONS_COLLECTION, service.textSource());
  return {
    service,
    routes: commonsRoutes({
      commons: service, limiter: deps.limiter, ratePerMinute: config.memory.memoryRatePerMinute, bodyLimitBytes: config.memory.memoryBodyLimitBytes, upgradeUrl,
    }),
  };
}
