/**
 * Money conservation with stakes: random sequences of purchases, grants, stakes, unstakes, slashes, sponsorships
 * and paid calls from several agents at once keep the sum over every account of the ledger (agents'
 * spendable credit, their stakes, the insurance pool, burned credit) plus what paid calls spent equal
 * to what was granted, to the unit, after every step; and a cooling stake's credit comes back exactly
 * once when two svc instances on one database settle it at the same time.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { sql } from 'kysely';
import { billingModuleFor } from '../src/modules/billing/module';
import { createTestDatabase, type TestDatabase } from './helpers/engines';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

const DAY = 86_400_000;
const admin = { 'x-admin-key': 'test-admin-key' };
let ref = 0;

/** A small seeded generator (mulberry32), so a failing sequence can be replayed from its seed. */
function random(seed: number) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let x = s;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4_294_967_296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(xs: T[]) => xs[Math.floor(next() * xs.length)] };
}

async function grant(t: TestApp, agentId: string, credits: number, days?: number) {
  const r = await t.request('POST', '/admin/billing/grants', {
    headers: admin, body: { agent_id: agentId, credits, reference: `money-${++ref}`, ...(days ? { expires_in_days: days } : {}) },
  });
  expect(r.status).toBe(200);
}

/** The ledger's totals at `now`: credit in every account's live lots, what paid calls spent net of refunds, what was granted. */
async function totals(t: TestApp) {
  const now = t.clock.now();
  const db = t.database.db;
  const lots = await db.selectFrom('credit_lots').select(sql<number>`coalesce(sum(remaining_units), 0)`.as('n'))
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)])).executeTakeFirstOrThrow();
  const byKind = await db.selectFrom('credit_ledger').select(['kind', sql<number>`sum(amount_units)`.as('n')]).groupBy('kind').execute();
  const k = (kind: string) => Number(byKind.find((r) => r.kind === kind)?.n ?? 0);
  return { lots: Number(lots.n), spent: -(k('spend') + k('refund')), granted: k('grant') + k('purchase'), movements: k('stake') + k('unstake') + k('slash') };
}

describe('money conservation', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  for (const seed of [7, 1234, 90_001]) {
    test(`seed ${seed}: every step keeps the sum over all accounts plus spending equal to the purchases and grants, to the unit`, async () => {
      const rnd = random(seed);
      const m = billingModuleFor(t.config)!;
      const agents: RegisteredAgent[] = [];
      for (let i = 0; i < 4; i++) agents.push(await t.registerAgent());
      for (const a of agents) await grant(t, a.agentId, 1_000 + rnd.int(12_000));
      const ops = {
        grant: (a: RegisteredAgent) => (rnd.next() < 0.3
          ? m.credits.add(a.agentId, { kind: 'purchase', units: 100 * (50 + rnd.int(3_000)), ref: `money-purchase-${++ref}` }).then(() => undefined)
          : grant(t, a.agentId, 1 + rnd.int(3_000), rnd.next() < 0.3 ? 1_000 : undefined)),
        stake: (a: RegisteredAgent) => t.request('POST', '/v1/agents/passport/stake', { token: a.apiKey, body: { tier: rnd.pick(['low', 'low', 'medium']) } }),
        unstake: (a: RegisteredAgent) => t.request('POST', '/v1/agents/passport/unstake', { token: a.apiKey }),
        slash: (a: RegisteredAgent) => t.request('POST', `/admin/agents/${a.agentId}/slash`, {
          headers: admin, body: { credits: 1 + rnd.int(700), reason: 'property test', harmed_agent_id: rnd.pick(agents.filter((x) => x !== a)).agentId },
        }),
        sponsor: (a: RegisteredAgent) => {
          const w = rnd.pick(agents.filter((x) => x !== a));
          return t.request('POST', `/v1/agents/${a.agentId}/sponsor/${w.agentId}`, { token: a.apiKey });
        },
        calls: async (a: RegisteredAgent) => {
          const n = 1 + rnd.int(30);
          await Promise.all(Array.from({ length: n }, () => m.metering.charge(a.agentId, 'search', { tier: 'free' }).then((c) => (rnd.next() < 0.1 ? c.refund() : undefined), () => undefined)));
        },
        balance: (a: RegisteredAgent) => t.request('GET', '/v1/billing', { token: a.apiKey }),
      };
      const names = Object.keys(ops) as (keyof typeof ops)[];
      for (let step = 0; step < 25; step++) {
        // Several agents at once, each with its own operation.
        const answers = await Promise.all(agents.map((a) => ops[rnd.pick(names)](a)));
        for (const r of answers) if (r && 'status' in r) expect(r.status, JSON.stringify(r.body)).toBeLessThan(500);
        t.clock.advance(rnd.int(6) * DAY);
        await m.metering.settle();
        const x = await totals(t);
        expect(x.lots + x.spent, `seed ${seed} step ${step}`).toBe(x.granted);
        expect(x.movements).toBe(0);
      }
      // Per agent: the ledger's own sum equals the spendable balance, and the API shows spendable and staked apart.
      for (const a of agents) {
        const b = (await t.request('GET', '/v1/billing', { token: a.apiKey })).body;
        const units = Math.round(Number(b.credits_remaining_usd) * 10_000);
        expect(await m.credits.ledgerBalance(a.agentId)).toBe(units);
        expect(Math.round(Number(b.credits_staked_usd) * 10_000)).toBe(await m.stakeLedger.staked(t.database.db, a.agentId, t.clock.now()));
      }
      const parity = await t.request('GET', '/admin/trust/parity-check', { headers: admin });
      expect(parity.body.mismatches).toEqual([]);
    }, 180_000); // about 150 requests and 25 ledger sums: seconds alone, far more on PGlite beside other test files
  }
});

// Two instances on one PostgreSQL server database. SQLite is one instance by design (two in one
// process would block each other's synchronous writes), and PGlite takes one connection at a time:
// there the same race runs on one instance.
const twoInstances = process.env.SVC_TEST_ENGINE === 'postgres' && !!process.env.SVC_TEST_PG;

describe(twoInstances ? 'two instances settle one cooling stake' : 'racing reads settle one cooling stake', () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase();
    a = await startTestApp({ db });
    b = twoInstances ? await startTestApp({ db }) : a;
  });
  afterAll(async () => {
    if (b !== a) await b?.close();
    await a?.close();
    await db?.close();
  });

  test('the credit returns exactly once, whichever instance and however many reads race for it', async () => {
    const both = (f: (x: TestApp) => void) => [...new Set([a, b])].forEach(f);
    const agent = await a.registerAgent();
    await grant(a, agent.agentId, 1_500);
    expect((await a.request('POST', '/v1/agents/passport/stake', { token: agent.apiKey, body: { tier: 'low' } })).status).toBe(201);
    both((x) => x.clock.advance(30 * DAY));
    expect((await b.request('POST', '/v1/agents/passport/unstake', { token: agent.apiKey })).status).toBe(200);
    both((x) => x.clock.advance(7 * DAY));
    const reads = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 ? a : b).request('GET', i % 4 < 2 ? '/v1/billing' : '/v1/usage', { token: agent.apiKey })));
    for (const r of reads) expect(r.status, r.raw).toBe(200);
    const after = (await a.request('GET', '/v1/billing', { token: agent.apiKey })).body;
    expect(after).toMatchObject({ credits_remaining_usd: '15.0000', credits_staked_usd: '0.0000' });
    const rows = await a.database.db.selectFrom('credit_ledger').select(['agent_id', 'amount_units']).where('kind', '=', 'unstake')
      .where('agent_id', 'in', [agent.agentId, `stake:${agent.agentId}`]).execute();
    expect(rows.map((r) => Number(r.amount_units)).sort((x, y) => x - y)).toEqual([-100_000, 100_000]);
    const released = await a.database.db.selectFrom('stakes').select(['status', 'released_units']).where('agent_id', '=', agent.agentId).execute();
    expect(released).toEqual([{ status: 'released', released_units: released[0].released_units }]);
    expect(Number(released[0].released_units)).toBe(100_000);
    expect(await billingModuleFor(b.config)!.credits.ledgerBalance(agent.agentId)).toBe(150_000);
    const log = await a.database.db.selectFrom('trust_log_entries').select('kind').where('agent_id', '=', agent.agentId).where('kind', '=', 'stake.released').execute();
    expect(log).toHaveLength(1);
  });
});
