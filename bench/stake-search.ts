/**
 * A paid search while the agent holds a stake against the same search by an agent without one, same
 * process, same run. Target: the staked agent's calls cost no more (ratio ≈ 100 %). Both agents are
 * past the free floor with ample credit, so every call is a real paid charge (answered from a credit
 * lease after the first); the staked agent's `_svc.usage` also carries its credit at stake, read with
 * the rest of its metering state. ROUNDS (default 6) rounds of SECONDS (default 3) per agent at
 * CONNECTIONS (default 10), the order rotated every round; the figure is the median of the rounds'
 * ratios.
 */
import { systemClock } from '../src/lib/clock';
import { createCredits } from '../src/modules/billing/credits';
import { createBillingStore } from '../src/modules/billing/store';
import { startBraveFake } from '../test/fakes/search-providers';
import { drive, interleaved, percent, registerAgent, roundRatios, startSvc } from './harness';

const ROUNDS = Number(process.env.ROUNDS ?? 6);
const SECONDS = Number(process.env.SECONDS ?? 3);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 10);

const brave = await startBraveFake({ apiKey: 'bench-key' });
const svc = await startSvc({ SVC_SEARCH_PRIMARY: 'brave', SVC_BRAVE_API_KEY: 'bench-key', SVC_BRAVE_URL: brave.url, SVC_SEARCH_CACHE: 'memory', SVC_EMBEDDINGS: 'none' });
try {
  const credits = createCredits({ store: createBillingStore(svc.svc.database), clock: systemClock });
  const staked = await registerAgent(svc.url, 'bench-staked');
  const plain = await registerAgent(svc.url, 'bench-plain');
  // Never-expiring credit (stakeable), far more than the run spends.
  for (const a of [staked, plain]) await credits.add(a.agentId, { kind: 'grant', units: 1_000_000_000, ref: `bench-${a.agentId}` });
  const s = await fetch(`${svc.url}/v1/agents/passport/stake`, {
    method: 'POST', headers: { authorization: `Bearer ${staked.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ tier: 'high' }),
  });
  if (s.status !== 201) throw new Error(`stake failed: ${s.status} ${await s.text()}`);
  const url = `${svc.url}/v1/search?q=${encodeURIComponent('benchmark query')}&num_results=10`;
  const headersOf = (a: { apiKey: string }) => ({ authorization: `Bearer ${a.apiKey}` });
  const check = await (await fetch(url, { headers: headersOf(staked) })).json() as { _svc: { usage: { credits_staked_usd: string } } };
  if (check._svc.usage.credits_staked_usd !== '500.0000') throw new Error(`the staked agent's usage shows ${check._svc.usage.credits_staked_usd} at stake`);
  for (const a of [plain, staked]) await drive('warmup', { url, duration: 2, headers: headersOf(a) });
  const rounds = await interleaved([
    () => drive('GET /v1/search (cache hit, paid) by an agent without a stake', { url, headers: headersOf(plain), duration: SECONDS, connections: CONNECTIONS }),
    () => drive('GET /v1/search (cache hit, paid) by an agent holding a high stake', { url, headers: headersOf(staked), duration: SECONDS, connections: CONNECTIONS }),
  ], ROUNDS);
  for (const r of rounds) console.log(JSON.stringify({ plain: r[0].requestsPerSecond, staked: r[1].requestsPerSecond }));
  const ratio = roundRatios(rounds, 1, 0);
  console.log(`round ratios, staked / not staked: ${ratio.ratios.map(percent).join(' ')}`);
  console.log(`paid cached search while holding a stake: median round ratio ${percent(ratio.median)} of the same search without one (target ≈ 100 %: no added cost)`);
} finally {
  await svc.close();
  await brave.close();
}
