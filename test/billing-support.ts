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
  const store = createBillingStore(handle);
  const credits = createCredits({ store, clock });
  const metering = createMetering({
    store, clock, agents: { tierOf: async () => 'free' }, upgradeUrl: 'http://svc.test/billing', ...extra,
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

/**
 * A fresh database on a local PostgreSQL server (SVC_TEST_PG, else 127.0.0.1:5432), for tests
 * where several svc instances (pools) share one database. Undefined when no server answers.
 */
export async function serverPostgres(): Promise<TestDatabase | undefined> {
  const { randomBytes } = await import('node:crypto');
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const pg = (await import('pg')).default;
  const serverUrl = process.env.SVC_TEST_PG?.startsWith('postgres') ? process.env.SVC_TEST_PG : 'postgres://postgres@127.0.0.1:5432/postgres';
  const admin = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 2000 });
  try {
    await admin.connect();
  } catch {
    return undefined;
  }
  const name = `svc_billing_${randomBytes(6).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-billing-'));
  return {
    engine: 'postgres', dataDir, env: { DATABASE_URL: url.toString(), SVC_DATA_DIR: dataDir },
    async close() {
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
