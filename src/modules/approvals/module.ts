/** Builds the approval events module for app.ts: POST and GET /v1/me/approval-events, and its activity source. */
import type { Kysely } from 'kysely';
import type { EnvelopeBuilder } from '../../http/envelope';
import type { Database } from '../../infra/db/schema';
import type { Clock } from '../../lib/clock';
import type { TierDefinition } from '../../lib/tiers';
import { approvalRoutes } from './routes';
import { createApprovalService } from './service';
import { createApprovalStore } from './store';

export function createApprovalModule(deps: {
  db: Kysely<Database>; clock: Clock; envelope: EnvelopeBuilder; upgradeUrl: string;
  effectiveTier?: (agentId: string, storedTier: string) => Promise<TierDefinition>;
}) {
  const service = createApprovalService({ store: createApprovalStore(deps.db), clock: deps.clock, upgradeUrl: deps.upgradeUrl, effectiveTier: deps.effectiveTier });
  return { service, routes: approvalRoutes({ approvals: service, envelope: deps.envelope }) };
}
