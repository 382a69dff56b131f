/** Builds the usage module for app.ts: GET /v1/usage and GET /v1/me/activity. */
import type { Kysely } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { Clock } from '../../lib/clock';
import { billingReadings, billingTerms } from './billing-readings';
import { usageRoutes } from './routes';
import { createUsageService } from './service';

export function createUsageModule(deps: { db: Kysely<Database>; clock: Clock; upgradeUrl: string }) {
  const service = createUsageService({ readings: billingReadings(deps.db, deps.clock), terms: billingTerms, clock: deps.clock, upgradeUrl: deps.upgradeUrl });
  return { service, routes: usageRoutes({ usage: service }) };
}
