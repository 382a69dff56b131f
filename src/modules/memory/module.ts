/**
 * Builds the memory module for app.ts: store, service, rate limiter, sweeper and routes, so the
 * composition root needs three lines. `meter` is billing's port (optional: unmetered without it).
 */
import type { Config } from '../../config';
import type { DatabaseHandle } from '../../infra/db/database';
import { createRateLimiter, type RateLimiter } from '../../infra/limits';
import type { Clock } from '../../lib/clock';
import type { VectorRuntime } from '../../infra/vectors/runtime';
import type { MemoryMeter } from './ports';
import { memoryRoutes } from './routes';
import type { EnvelopeBuilder } from '../../http/envelope';
import { createLexicalIndex } from '../../infra/lexical';
import { backfillLexical, createMemorySemantic, MEMORY_COLLECTION, memoryTextSource } from './semantic';
import { createMemoryService } from './service';
import { createMemoryStore } from './store';
import { startSweeper } from './sweeper';

export interface MemoryModuleDeps {
  config: Config;
  database: DatabaseHandle;
  clock: Clock;
  meter?: MemoryMeter;
  /** Builds `_svc` on metered responses. */
  envelope?: EnvelopeBuilder;
  /** Embedder, vector index and indexer shared with other modules; search answers 503 without an embedder. */
  vectors?: VectorRuntime;
  /** Shared limiter (created here when absent). */
  limiter?: RateLimiter;
  log?: (msg: string, err: unknown) => void;
}

export function createMemoryModule(deps: MemoryModuleDeps) {
  const { config, clock } = deps;
  const limiter = deps.limiter ?? createRateLimiter({ redisUrl: config.core.redisUrl, clock });
  const store = createMemoryStore(deps.database);
  const vectors = deps.vectors;
  const lexical = vectors?.lexical ?? createLexicalIndex(deps.database);
  const semantic = createMemorySemantic({ db: deps.database.db, lexical, embedder: vectors?.embedder, index: vectors?.index, indexer: vectors?.indexer, catchUpMs: vectors?.catchUpMs });
  // Entries written before the lexical index existed (or while it was off) are indexed in the background.
  void backfillLexical(store, semantic, clock).catch((e) => deps.log?.('memory lexical indexing could not be completed', e));
  if (vectors?.indexer) {
    vectors.indexer.addSource(MEMORY_COLLECTION, memoryTextSource(store, clock));
    // A new model (or vectors lost) → queue what needs (re-)embedding; the indexer works through it.
    const stale = (modelId: string, limit: number) => store.keysNeedingVectors(modelId, clock.now(), limit)
      .then((rows) => rows.map((r) => ({ ownerId: r.agent_id, itemId: r.key })));
    vectors.indexer.enqueueStale(MEMORY_COLLECTION, stale).catch((e) => deps.log?.('memory re-embedding could not be queued', e));
  }
  const upgradeUrl = config.billing.billingPageUrl ?? `${config.core.baseUrl}/billing`;
  const service = createMemoryService({
    store,
    clock,
    upgradeUrl,
    meter: deps.meter,
    semantic,
  });
  const stopSweeper = startSweeper(() => service.sweepExpired(), config.memory.memorySweepIntervalSeconds,
    (e) => deps.log?.('memory sweep failed', e));
  return {
    service,
    limiter,
    routes: memoryRoutes({
      envelope: deps.envelope,
      memory: service, limiter, ratePerMinute: config.memory.memoryRatePerMinute, bodyLimitBytes: config.memory.memoryBodyLimitBytes, upgradeUrl,
    }),
    async close() {
      stopSweeper();
      if (!deps.limiter) await limiter.close();
    },
  };
}
