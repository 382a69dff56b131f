/**
 * Builds the search module for app.ts: provider stack from settings (docs/search-providers.md),
 * metering through billing's Metering, the `usage` object from the usage module.
 */
import type { Config } from '../../config';
import { throttled } from '../../lib/throttled';
import type { EnvelopeBuilder } from '../../http/envelope';
import type { Clock } from '../../lib/clock';
import { createWebSearch, searchSetupWarnings, webSearchStatus } from '../../infra/search-providers';
import type { Metering } from '../billing/metering';
import type { SearchUsageReader } from './ports';
import { searchRoutes } from './routes';
import { createSearchService } from './service';

export interface SearchModuleDeps {
  config: Config;
  clock: Clock;
  envelope: EnvelopeBuilder;
  metering: Pick<Metering, 'charge'>;
  usage: SearchUsageReader;
  log: { warn(msg: string): void; error(obj: unknown, msg: string): void };
}

export function createSearchModule(deps: SearchModuleDeps) {
  const { config, log } = deps;
  // Redis away: every search and every reconnect attempt fails the same way; one line a minute says so.
  const cacheTrouble = throttled((msg) => log.warn(msg), () => deps.clock.now());
  const web = createWebSearch(config, { clock: deps.clock, onError: (e) => cacheTrouble(`search cache: ${e instanceof Error ? e.message : String(e)}`) });
  for (const w of searchSetupWarnings(config.search)) log.warn(w);
  const service = createSearchService({
    web: web.search,
    fallback: web.fallback,
    newsDomains: config.search.newsDomains,
    unconfiguredReason: webSearchStatus(config.search).reason,
    meter: { chargeSearch: (agentId, tier) => deps.metering.charge(agentId, 'search', { tier }) },
    usage: deps.usage,
    log: (msg, err) => log.error({ err }, msg),
  });
  return {
    service,
    cache: web.cache,
    routes: searchRoutes({ search: service, envelope: deps.envelope }),
    close: () => web.cache.close(),
  };
}
