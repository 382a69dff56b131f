/**
 * A charge inside a caller's transaction that takes the balance under the auto-top-up threshold asks
 * for the refill only once that dip is on disk, also when the caller answers at COMMIT without
 * waiting for the WAL flush (browse does: src/modules/browse/store.ts). SQLite, flush finished by hand.
 */
import type SQLite from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { openTempSqlite, type TempSqlite } from '../../../test/helpers/temp-sqlite';
import { createCommitSync } from '../../infra/db/commit-sync';
import type { Database } from '../../infra/db/schema';
import { credits } from '../../lib/money';
import { createCredits } from './credits';
import { createMetering, type LowBalance } from './metering';
import { createBillingStore } from './store';

let t: TempSqlite;
let sqlite: SQLite.Database;
let db: Kysely<Database>;

beforeEach(async () => {
  t = await openTempSqlite('metering-dip', { migrate: 'latest' });
  ({ sqlite, db } = t);
});
afterEach(() => t.close());

const settle = () => new Promise((r) => setImmediate(r));

test('the refill for a dip made inside a caller-committed transaction waits for the flush', async () => {
  const pending: (() => void)[] = [];
  const commits = createCommitSync(db, sqlite, { flush: () => new Promise<void>((resolve) => pending.push(resolve)) });
  const store = createBillingStore({ db, sqlite, commits });
  const clock = { now: () => Date.UTC(2026, 10, 24, 12) };
  const lows: LowBalance[] = [];
  const metering = createMetering({ store, clock, agents: { tierOf: async () => 'free' }, upgradeUrl: 'u', onLowBalance: (e) => lows.push(e) });
  const agent = 'agent-dip';
  await createCredits({ store, clock }).add(agent, { kind: 'grant', units: credits(10), ref: 'dip-grant' });
  await store.withLocks([agent], clock.now(), (trx) => store.updateAccount(trx, agent, {
    auto_topup_enabled: 1, auto_topup_threshold_units: credits(100), auto_topup_units: credits(50), topup_dip_open: 0,
  }, clock.now()));

  // As browse logs a page: charge inside the caller's transaction, committed without waiting for the disk.
  const browse = async () => {
    const c = await commits.transaction((trx) => metering.chargeWithin(trx, agent, 'browse_static', { tier: 'free' }));
    return { c, usage: await c.committed() };
  };
  for (let i = 0; i < 20; i++) expect((await browse()).c.free).toBe(true); // the free floor of 20
  const paid = await browse();
  expect(paid.c.free).toBe(false);
  expect(paid.usage.credits_remaining_usd).toBe('0.0700'); // 10 credits − 3: under the threshold of 100
  for (let i = 0; i < 5; i++) await settle();
  // The dip is committed but not yet on disk: no refill asked for.
  expect(pending.length).toBeGreaterThan(0);
  expect(lows).toEqual([]);
  for (const resolve of pending.splice(0)) resolve();
  for (let i = 0; i < 5 && lows.length === 0; i++) await settle();
  expect(lows).toHaveLength(1);
  expect(lows[0]).toMatchObject({ agentId: agent, balanceUnits: credits(7) });

  // Still inside the same dip: the next paid charge asks for nothing.
  await browse();
  for (const resolve of pending.splice(0)) resolve();
  for (let i = 0; i < 5; i++) await settle();
  expect(lows).toHaveLength(1);
});
