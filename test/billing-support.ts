/** Shared set-up of the billing tests: a migrated database of the engine under test and billing services on it. */
import { openDatabase, type DatabaseHandle } from '../src/infra/db/database';
import { migrateToLatest } from '../src/infra/db/migrate';
import { ManualClock } from '../src/lib/clock';
import { newId } from '../src/lib/ids';
import { createCredits } from '../src/modules/billing/credits';
import { createMetering, type MeteringDeps } from '../src/modules/billing/metering';
import { createBillingStore } from '../src/modules/billing/store';
import { createTestDatabase, type TestDatabase } from './helpers/engines';

export interface BillingRig {
  handle: DatabaseHandle;
  clock: ManualClock;
  store: ReturnType<typeof createBillingStore>;
  credits: ReturnType<typeof createCredits>;
  metering: ReturnType<typeof createMetering>;
  close(): Promise<void>;
}

export async function openRigDatabase(test?: TestDatabase, poolMax?: number): Promise<{ test: TestDatabase; handle: DatabaseHandle }> {
  const t = test ?? (await createTestDatabase());
  const handle = openDatabase({ databaseUrl: t.env.DATABASE_URL, dataDir: t.dataDir, poolMax: poolMax ?? Number(t.env.DATABASE_POOL_MAX ?? 10) });
  await migrateToLatest(handle.db);
  return { test: t, handle };
}

/** Billing services over one database handle (one "svc instance"). */
export function rigOn(handle: DatabaseHandle, clock: ManualClock, extra: Partial<MeteringDeps> = {}) {
  const store = createBillingStore(handle.db);
  const credits = createCredits({ store, clock });
  const metering = createMetering({
    store, clock, agents: { tierOf: async () => 'free' }, upgradeUrl: 'http://svc.test/v1/billing/credits/checkout', ...extra,
  });
  return { store, credits, metering };
}

export async function startRig(extra: Partial<MeteringDeps> = {}): Promise<BillingRig> {
  const { test, handle } = await openRigDatabase();
  const clock = new ManualClock();
  return {
    handle, clock, ...rigOn(handle, clock, extra),
    async close() {
      await handle.close();
      await test.close();
    },
  };
}

export const agent = (): string => newId();
