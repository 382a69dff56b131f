/** Builds the feedback module for app.ts. */
import type { Kysely } from 'kysely';
import type { EnvelopeBuilder } from '../../http/envelope';
import type { Database } from '../../infra/db/schema';
import type { Clock } from '../../lib/clock';
import type { TierDefinition } from '../../lib/tiers';
import { feedbackRoutes } from './routes';
import { createFeedbackService } from './service';
import { createFeedbackStore } from './store';

export function createFeedbackModule(deps: {
  db: Kysely<Database>; clock: Clock; envelope: EnvelopeBuilder; upgradeUrl: string;
  effectiveTier?: (agentId: string, storedTier: string) => Promise<TierDefinition>;
}) {
  const service = createFeedbackService({ store: createFeedbackStore(deps.db), clock: deps.clock, upgradeUrl: deps.upgradeUrl, effectiveTier: deps.effectiveTier });
  return { service, routes: feedbackRoutes({ feedback: service, envelope: deps.envelope }) };
}
