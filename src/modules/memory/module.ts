/**
 * Builds the memory module for app.ts: store, service, rate limiter, sweeper and routes, so the
 * composition root needs three lines. `meter` is billing's port (optional: unmetered without it).
 */
import type { Config } from '../../config';
import type { DatabaseHandle } from '../../infra/db/database';
import { createRateLimiter, type RateLimiter } from '../../infra/limits';
import type { Clock } from '../../lib/clock';
import type { MemoryMeter, MemorySemantic } from './ports';
import { memoryRoutes } from './routes';
import { createMemoryService } from './service';
import { createMemoryStore } from './store';
import { startSweeper } from './sweeper';

export interface MemoryModuleDeps {
  config: Config;
  database: DatabaseHandle;
  clock: Clock;
  meter?: MemoryMeter;
  semantic?: MemorySemantic;
  /** Shared limiter (created here when absent). */
  limiter?: RateLimiter;
  log?: (msg: string, err: unknown) => void;
}

export function createMemoryModule(deps: MemoryModuleDeps) {
  const { config, clock } = deps;
  const limiter = deps.limiter ?? createRateLimiter({ redisUrl: config.core.redisUrl, clock });
  const service = createMemoryService({
    store: createMemoryStore(deps.database.db),
    clock,
    upgradeUrl: config.billing.billingPageUrl ?? `${config.core.baseUrl}/billing`,
    meter: deps.meter,
    semantic: deps.semantic,
  });
  const stopSweeper = startSweeper(() => service.sweepExpired(), config.memory.memorySweepIntervalSeconds,
    (e) => deps.log?.('memory sweep failed', e));
  return {
    service,
    limiter,
    routes: memoryRoutes({
      memory: service, limiter, ratePerMinute: config.memory.memoryRatePerMinute, bodyLimitBytes: config.memory.memoryBodyLimitBytes,
    }),
    async close() {
      stopSweeper();
      if (!deps.limiter) await limiter.close();
    },
  };
}
