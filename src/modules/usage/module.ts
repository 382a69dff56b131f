/** Builds the usage module for app.ts: GET /v1/usage and GET /v1/me/activity. */
import type { Clock } from '../../lib/clock';
import type { MeterReadings, MeterTerms } from './ports';
import { usageRoutes } from './routes';
import { createUsageService } from './service';

/** `readings` and `terms`: billing's counters and prices (billing/usage-readings.ts, through billing's module). */
export function createUsageModule(deps: { readings: MeterReadings; terms: MeterTerms; clock: Clock; upgradeUrl: string }) {
  const service = createUsageService({ readings: deps.readings, terms: deps.terms, clock: deps.clock, upgradeUrl: deps.upgradeUrl });
  return { service, routes: usageRoutes({ usage: service }) };
}
