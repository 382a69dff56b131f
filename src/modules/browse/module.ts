/**
 * Builds the browse module for app.ts from the outbound web layer: one guarded client (address
 * policy, redirects, size and time caps from SVC_BROWSE_* / SVC_OUTBOUND_*), the robots.txt policy
 * on top of it, the extraction thread and, when a Chromium is configured or found, the renderer
 * whose every sub-request goes through the same client.
 */
import type { Config } from '../../config';
import type { EnvelopeBuilder } from '../../http/envelope';
import type { Clock } from '../../lib/clock';
import type { DatabaseHandle } from '../../infra/db/database';
import { createOutboundWebFromConfig, type OutboundWeb } from '../../infra/web';
import { createRendererFromConfig } from '../../infra/renderer';
import type { MeteredAction, Metering } from '../billing/metering';
import type { BrowseMode, TierReader, TrustLevelReader } from './ports';
import { browseRoutes } from './routes';
import { createBrowseService } from './service';
import { createBrowseStore } from './store';
import { createProbation } from './trust';

export interface BrowseModuleDeps {
  config: Config;
  database: DatabaseHandle;
  clock: Clock;
  envelope: EnvelopeBuilder;
  metering: Pick<Metering, 'check' | 'chargeWithin'>;
  tiers: TierReader;
  /** Trust levels: an agent at a level above floor (staked, sponsored, established) is never probationary. */
  levels?: TrustLevelReader;
  /** The outbound web layer when app.ts shares one; built from settings otherwise. */
  web?: OutboundWeb;
}

const browseAction = (mode: BrowseMode): MeteredAction => (mode === 'dynamic' ? 'browse_dynamic' : 'browse_static');

export function createBrowseModule(deps: BrowseModuleDeps) {
  const { config, clock } = deps;
  const web = deps.web ?? createOutboundWebFromConfig(config, { clock });
  const { client, robots, extractor } = web;
  const renderer = createRendererFromConfig(config, { client, extract: (input) => extractor.extract(input) });
  const service = createBrowseService({
    store: createBrowseStore(deps.database),
    clock,
    fetcher: {
      checkUrl: (url) => client.checkUrl(url),
      resolve: (url) => client.resolve(url),
      fetch: (url, opts) => client.fetch(url, opts),
    },
    robots,
    extractor,
    renderer,
    meter: {
      check: (agentId, tier, mode) => deps.metering.check(agentId, browseAction(mode), { tier }),
      chargeWithin: (trx, agentId, tier, mode) => deps.metering.chargeWithin(trx, agentId, browseAction(mode), { tier }),
    },
    probation: createProbation({ tiers: deps.tiers, levels: deps.levels, probationHours: config.search.browseProbationHours, now: () => clock.now() }),
  });
  return {
    service,
    routes: browseRoutes({ browse: service, envelope: deps.envelope }),
    async close() {
      await renderer.close();
      if (!deps.web) await web.close();
    },
  };
}
