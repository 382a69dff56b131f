/**
 * Credit holds of an instance that died (billing/leases.ts) set nothing aside once they lapse, but
 * their rows stayed in metering_holds until the same agent took a new hold, for an idle agent
 * forever. Every instance deletes holds that lapsed more than a minute ago, at start and every
 * SVC_METERING_HOLD_SWEEP_SECONDS; live holds and ones that lapsed just now are kept.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestApp, type TestApp } from './helpers/harness';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { SVC_METERING_HOLD_SWEEP_SECONDS: '1' } });
});
afterAll(async () => t?.close());

const holdIds = async () => (await t.database.db.selectFrom('metering_holds').select('hold_id').orderBy('hold_id').execute()).map((r) => r.hold_id);

test('a hold of a dead instance is deleted a minute after it lapsed; live and just-lapsed holds stay', async () => {
  const a = await t.registerAgent();
  const now = t.clock.now();
  const row = (hold_id: string, expires_at: number) => ({ agent_id: a.agentId, hold_id, pool: 'search', units: 1000, expires_at, created_at: now - 3_600_000 });
  await t.database.db.insertInto('metering_holds').values([
    row('h1-lapsed-long-ago', now - 3_600_000),
    row('h2-lapsed-61s-ago', now - 61_000),
    row('h3-lapsed-just-now', now - 5_000),
    row('h4-live', now + 30_000),
  ]).execute();
  await expect.poll(holdIds, { timeout: 5_000, interval: 100 }).toEqual(['h3-lapsed-just-now', 'h4-live']);
  // Its time comes: a minute after it lapsed, the next sweep takes it too.
  t.clock.advance(60_000);
  await expect.poll(holdIds, { timeout: 5_000, interval: 100 }).toEqual(['h4-live']);
});
