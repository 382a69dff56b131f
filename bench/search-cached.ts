/**
 * Cached web search vs a bare Fastify route, same process, same run. Target: ≥ 40 % of the bare
 * route's requests/second. svc runs on the embedded defaults (SQLite, in-process search cache) with
 * a loopback Brave fake as primary; the agent holds granted credit so every call past the free
 * floor is a real paid charge (ledger write) — the full path: auth, metering transaction, cache
 * hit, credibility scoring, usage object, `_svc` envelope.
 * It also prints billing's charge alone at 10 concurrent callers, for context.
 * Two baselines: the harness's bare route (a ~90-byte JSON object, the baseline this bench's figure
 * is measured against) and, for context, a bare route answering the very
 * search answer svc gives (~3.4 KB): what Fastify alone pays to serialise and send that much JSON.
 * A ceiling, also in the same run: the same svc route with billing's charge replaced by one made
 * beforehand (no lock, no decision, no ledger row, no commit; everything else of the route as is),
 * i.e. what the route would reach if metering cost nothing. If that ceiling is under the target, no
 * change to metering alone can meet it.
 * Paid searches past the first are answered from a credit lease (credit held under the lock, calls
 * written within ~0.1 s: docs/billing.md); `LEASES=off` measures a charge decided and written per
 * call.
 * ROUNDS (default 6) rounds of SECONDS (default 3) per path at CONNECTIONS (default 10), the order
 * rotated every round (harness.ts `interleaved`); the figure is the median of the rounds' ratios
 * (single 8 s runs of each moved 32–41 % from run to run). The ratio
 * depends on CONNECTIONS: requests that share a group commit share its transaction and WAL flush.
 */
import Fastify from 'fastify';
import { systemClock } from '../src/lib/clock';
import { createCredits } from '../src/modules/billing/credits';
import { createMetering } from '../src/modules/billing/metering';
import { billingModuleFor } from '../src/modules/billing/module';
import { createBillingStore } from '../src/modules/billing/store';
import { startBraveFake } from '../test/fakes/search-providers';
import { drive, interleaved, percent, registerAgent, report, roundRatios, startBaseline, startSvc } from './harness';

const ROUNDS = Number(process.env.ROUNDS ?? 6);
const SECONDS = Number(process.env.SECONDS ?? 3);
// autocannon connections for every path (default 10, the harness's): group commit makes the charge's share depend on it.
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 10);

const brave = await startBraveFake({ apiKey: 'bench-key' });
const baseline = await startBaseline();
const svc = await startSvc({ SVC_SEARCH_PRIMARY: 'brave', SVC_BRAVE_API_KEY: 'bench-key', SVC_BRAVE_URL: brave.url, SVC_SEARCH_CACHE: 'memory', SVC_EMBEDDINGS: 'none',
  // METERING=off runs the same route with billing's uncounted mode, to show what the per-call commit costs.
  ...(process.env.METERING === 'off' ? { SVC_METERING_ENABLED: 'false' } : {}),
  // LEASES=off: every paid search charged in its own group-committed transaction, as before credit leases.
  ...(process.env.LEASES === 'off' ? { SVC_METERING_LEASE_CALLS: '0' } : {}) });
try {
  const { apiKey, agentId } = await registerAgent(svc.url);
  const credits = createCredits({ store: createBillingStore(svc.svc.database), clock: systemClock });
  await credits.add(agentId, { kind: 'grant', units: 1_000_000_000, ref: 'bench-grant' }); // 100,000 USD: never runs out here
  const url = `${svc.url}/v1/search?q=${encodeURIComponent('benchmark query')}&num_results=10`;
  const headers = { authorization: `Bearer ${apiKey}` };
  const first = await (await fetch(url, { headers })).json() as { cached: boolean };
  if (first.cached) throw new Error('first call should miss the cache');
  const answer = await (await fetch(url, { headers })).json();
  const same = Fastify({ logger: false });
  same.get('/bare', async () => answer);
  const sameUrl = `${await same.listen({ host: '127.0.0.1', port: 0 })}/bare`;
  await drive('warmup', { url: `${baseline.url}/bare`, duration: 2 });
  await drive('warmup', { url: sameUrl, duration: 2 });
  await drive('warmup', { url, duration: 2, headers });
  // The ceiling: billing's charge swapped for one made beforehand (the search module calls it through
  // billing's Metering object); swapped back before anything else runs.
  const metered = billingModuleFor(svc.config)!.metering;
  const made = await metered.charge(agentId, 'search');
  const charge = metered.charge;
  const ceiling = async () => {
    metered.charge = async () => made;
    try {
      return await drive('GET /v1/search (cache hit, charge costing nothing: ceiling)', { url, headers, duration: SECONDS, connections: CONNECTIONS });
    } finally {
      metered.charge = charge;
    }
  };
  const rounds = await interleaved([
    () => drive('bare Fastify route', { url: `${baseline.url}/bare`, duration: SECONDS, connections: CONNECTIONS }),
    () => drive('bare Fastify route answering the same 3.4 KB JSON', { url: sameUrl, duration: SECONDS, connections: CONNECTIONS }),
    () => drive('GET /v1/search (cache hit, charged)', { url, headers, duration: SECONDS, connections: CONNECTIONS }),
    ceiling,
  ], ROUNDS);
  await same.close();
  for (const r of rounds) console.log(JSON.stringify(Object.fromEntries(r.map((m, i) => [['bare', 'bareSame', 'search', 'ceiling'][i], m.requestsPerSecond]))));
  const avg = (i: number) => ({ ...rounds[0][i], requestsPerSecond: Math.round(rounds.reduce((a, r) => a + r[i].requestsPerSecond, 0) / rounds.length) });
  const searchVsBare = roundRatios(rounds, 2);
  const ceilingVsBare = roundRatios(rounds, 3);
  console.log(`round ratios, search / bare route: ${searchVsBare.ratios.map(percent).join(' ')}`);
  console.log(`round ratios, ceiling / bare route: ${ceilingVsBare.ratios.map(percent).join(' ')}`);
  console.log(`cached search (${CONNECTIONS} connections): median round ratio ${percent(searchVsBare.median)} of the bare route (target ≥ 40 %); ` +
    `against the bare route answering the same 3.4 KB JSON ${percent(roundRatios(rounds, 2, 1).median)}; ceiling (charge costing nothing) ${percent(ceilingVsBare.median)}`);
  console.log(`averages over ${ROUNDS} rounds of ${SECONDS} s: ${report(avg(0), avg(2))}`);
  console.log(`  ceiling: ${report(avg(0), avg(3))}`);
  console.log(`provider requests during the run: ${brave.requests} (1 = every measured call was a cache hit)`);
  // Context: the ceiling billing's charge alone reaches with 10 concurrent callers (same agent, same database).
  const metering = createMetering({ store: createBillingStore(svc.svc.database), clock: systemClock, agents: { tierOf: async () => 'free' }, upgradeUrl: 'u' });
  const t0 = performance.now();
  let n = 0;
  while (performance.now() - t0 < 4000) {
    await Promise.all(Array.from({ length: 10 }, () => metering.charge(agentId, 'search', { tier: 'free' })));
    n += 10;
  }
  const perSecond = Math.round(n / ((performance.now() - t0) / 1000));
  console.log(`billing charge alone (10 concurrent): ${perSecond}/s`);
} finally {
  await svc.close();
  await baseline.close();
  await brave.close();
}
