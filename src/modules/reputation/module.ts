/** Builds the reputation module for app.ts: ratings, scores, history and disputes on the trust log. */
import type { Config } from '../../config';
import type { EnvelopeBuilder } from '../../http/envelope';
import type { DatabaseHandle } from '../../infra/db/database';
import type { Clock } from '../../lib/clock';
import type { TrustModule } from '../trust/module';
import { reputationRoutes } from './routes';
import { createReputationService, type AgentProfile } from './service';
import { createReputationStore } from './store';
import { reputationReplayer } from './replay';
import { reputationTrace } from './trace';
import { DISPUTES_PER_DAY } from './model';

export function createReputationModule(deps: {
  config: Config; database: DatabaseHandle; clock: Clock; envelope: EnvelopeBuilder; trust: TrustModule;
  profile: (agentId: string, opts?: { levels?: boolean }) => Promise<AgentProfile | undefined>;
}) {
  const store = createReputationStore(deps.database.db, deps.database.engine);
  const service = createReputationService({
    db: deps.database.db, store, log: deps.trust.log, epochs: deps.trust.epochs, clock: deps.clock, profile: deps.profile,
    ratingsPerDay: deps.config.trust.ratingsPerDay, disputesPerDay: DISPUTES_PER_DAY,
  });
  deps.trust.addProjection({
    replay: reputationReplayer(store),
    trace: reputationTrace(service, store),
    adoption: async (since) => {
      const c = await store.counts(since);
      return { reputation: c };
    },
  });
  return { service, routes: reputationRoutes({ reputation: service, envelope: deps.envelope }) };
}
