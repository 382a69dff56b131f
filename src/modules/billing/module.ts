/**
 * Builds the billing module for app.ts: store, ledger, metering (what metered routes call), the
 * memory adapter, Stripe (when configured), referrals with their timer, and the routes.
 * Ports set later by app.ts (`setCommons`, `setStorage`) let other modules feed the snapshot.
 */
import { effectiveTier } from '../../lib/tiers';
import type { Config } from '../../config';
import type { DatabaseHandle } from '../../infra/db/database';
import { paymentsFromConfig, type PaymentsGateway } from '../../infra/payments';
import type { Clock } from '../../lib/clock';
import { createCredits } from './credits';
import { memoryMeterFrom } from './memory-meter';
import { billingReadings, billingTerms } from './usage-readings';
import { commonsUsage, createMetering, type AgentTierPort, type CommonsStatsPort } from './metering';
import { nextFreeSlotAgeOut } from './meter-store';
import { createUnmetered } from './unmetered';
import { FLOOR_WINDOW_MS } from './pricing';
import { createReferralStore } from './referral-store';
import { createReferralPayouts } from './referrals';
import { billingRoutes } from './routes';
import { createBillingService } from './service';
import type { StorageUsagePort } from './snapshot';
import { createStakeLedger } from './stake-ledger';
import { createBillingStore } from './store';

/** What billing asks of the stake module before its reads. */
export interface StakeSettlePort { settle(agentId: string): Promise<void> }

export interface BillingModuleDeps {
  config: Config;
  database: DatabaseHandle;
  clock: Clock;
  agents: AgentTierPort;
  /** Overrides the gateway built from config (tests). */
  payments?: PaymentsGateway;
  log?: (msg: string, err?: unknown) => void;
}

/** The module built for a config object (tests and operator scripts reach the services through it). */
const byConfig = new WeakMap<Config, BillingModule>();
/** A credit hold is deleted this long after it lapsed (docs/billing.md, Credit leases). */
const HOLD_LAPSE_GRACE_MS = 60_000;
export const billingModuleFor = (config: Config): BillingModule | undefined => byConfig.get(config);

export function createBillingModule(deps: BillingModuleDeps) {
  const { config, clock } = deps;
  const base = config.core.baseUrl;
  const billingPageUrl = config.billing.billingPageUrl ?? `${base}/billing`;
  const store = createBillingStore(deps.database);
  // A purchase can lift a credit tier (spark, sprint, ...): the agent record follows, so every module
  // that reads the authenticated tier sees the billed one.
  const credits = createCredits({
    store, clock,
    onPurchase: async (agentId, lifetime) => {
      const stored = await deps.agents.tierOf(agentId);
      if (stored === undefined || !deps.agents.setTier) return;
      const next = effectiveTier(stored, lifetime).name;
      if (next !== stored) await deps.agents.setTier(agentId, next);
    },
  });
  const payments = deps.payments ?? paymentsFromConfig(config.billing);
  let commons: CommonsStatsPort | undefined;
  let storage: StorageUsagePort | undefined;
  let stakes: StakeSettlePort | undefined;

  const commonsUrl = `${base}/v1/commons/entries`;
  const agentExists = async (agentId: string) => (await deps.agents.tierOf(agentId)) !== undefined;
  const billing = createBillingService({
    store, credits, clock, payments, publishableKey: config.billing.stripePublishableKey, billingPageUrl, log: deps.log, agentExists,
  });
  const counted = createMetering({
    store, clock, agents: deps.agents,
    upgradeUrl: billingPageUrl, // where every limit error points (the usage object too)
    commonsUrl,
    commons: () => commons,
    onLowBalance: (e) => void billing.refill(e),
    leases: { calls: config.billing.meteringLeaseCalls },
    log: deps.log,
  });
  // Readers of billing's counters write what leases answered first (leases.ts), and take back the
  // credit of a stake whose cooling is over.
  const settleFirst = async (agentId: string) => {
    await stakes?.settle(agentId);
    await counted.settle(agentId);
  };
  const usageReadings = billingReadings(deps.database.db, clock, settleFirst);
  const metering = config.billing.meteringEnabled ? counted : createUnmetered({
    counted, readings: usageReadings, agents: deps.agents, clock,
    stamp: (agentId) => store.sql.stamp(agentId),
    nextAgeOut: (agentId, now) => nextFreeSlotAgeOut(deps.database.db, agentId, ['browse', 'search'], now, FLOOR_WINDOW_MS),
    commons: (agentId) => commonsUsage({ commons: () => commons, commonsUrl }, agentId),
  });
  const referrals = createReferralPayouts({
    store, referrals: createReferralStore(deps.database.db), clock,
    enabled: config.billing.referralPayoutsEnabled, minActions: config.billing.referralMinActions,
    creditExpiryDays: config.billing.referralCreditExpiryDays,
  });
  // Credit holds that lapsed (their instance died or stalled) are deleted a minute after, by any instance.
  let sweeping: Promise<unknown> | undefined;
  const sweepHolds = () => {
    sweeping ??= store.sql.dropLapsedHolds(clock.now() - HOLD_LAPSE_GRACE_MS)
      .catch((e) => deps.log?.('credit hold sweep failed', e))
      .finally(() => (sweeping = undefined));
  };
  sweepHolds();
  const holdSweep = setInterval(sweepHolds, config.billing.meteringHoldSweepSeconds * 1000);
  holdSweep.unref();
  const every = config.billing.referralSettleIntervalSeconds;
  const timer = config.billing.referralPayoutsEnabled && every > 0
    ? setInterval(() => void referrals.settle().catch((e) => deps.log?.('referral settle failed', e)), every * 1000)
    : undefined;
  timer?.unref();

  let pagePath = '/billing';
  try {
    const u = new URL(billingPageUrl);
    if (u.origin === new URL(base).origin) pagePath = u.pathname.replace(/\/+$/, '') || '/billing';
  } catch { /* default path */ }

  const module: BillingModule = {
    store, credits, metering, billing, referrals,
    stakeLedger: createStakeLedger({ store, upgradeUrl: billingPageUrl }),
    // With metering off too: its chargeWithin charges nothing and `committed()` gives `_svc.usage`.
    memoryMeter: memoryMeterFrom(metering),
    usageReadings,
    usageTerms: billingTerms,
    /** The commons module's statistics for `_svc.usage` (commons_size, commons_contributions). */
    setCommons(port: CommonsStatsPort) { commons = port; },
    /** Storage figures of the memory and blob modules for the snapshot. */
    setStorage(port: StorageUsagePort) { storage = port; },
    /** The stake module: returns a cooling stake's credit when its time is up, before billing's reads. */
    setStakes(port: StakeSettlePort) { stakes = port; },
    routes: billingRoutes({ billing, store, clock, settle: settleFirst, storage: () => storage, billingPagePath: pagePath, stripeJsUrl: config.billing.stripeJsUrl, referrals, credits, agentExists }),
    async close() {
      clearInterval(holdSweep);
      await sweeping;
      if (timer) clearInterval(timer);
      await counted.close();
    },
  };
  byConfig.set(config, module);
  return module;
}

export interface BillingModule {
  store: ReturnType<typeof createBillingStore>;
  credits: ReturnType<typeof createCredits>;
  metering: ReturnType<typeof createMetering>;
  billing: ReturnType<typeof createBillingService>;
  referrals: ReturnType<typeof createReferralPayouts>;
  memoryMeter: ReturnType<typeof memoryMeterFrom>;
  /** Credit at stake, moved through the ledger (the stake module decides, this moves the money). */
  stakeLedger: ReturnType<typeof createStakeLedger>;
  /** For the usage module (GET /v1/usage, search usage): billing's counters and prices, read-only. */
  usageReadings: ReturnType<typeof billingReadings>;
  usageTerms: typeof billingTerms;
  setCommons(port: CommonsStatsPort): void;
  setStorage(port: StorageUsagePort): void;
  setStakes(port: StakeSettlePort): void;
  routes: ReturnType<typeof billingRoutes>;
  close(): Promise<void>;
}
