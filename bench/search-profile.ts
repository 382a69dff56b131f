import { systemClock } from '../src/lib/clock';
import { createCredits } from '../src/modules/billing/credits';
import { createBillingStore } from '../src/modules/billing/store';
import { startBraveFake } from '../test/fakes/search-providers';
import { drive, registerAgent, startSvc } from './harness';

/** CPU profile helper: `node --cpu-prof --import tsx bench/search-profile.ts` drives a cached search for 6 s. */
const brave = await startBraveFake({ apiKey: 'bench-key' });
const svc = await startSvc({ SVC_SEARCH_PRIMARY: 'brave', SVC_BRAVE_API_KEY: 'bench-key', SVC_BRAVE_URL: brave.url, SVC_SEARCH_CACHE: 'memory', SVC_EMBEDDINGS: 'none',
  ...(process.env.METERING === 'off' ? { SVC_METERING_ENABLED: 'false' } : {}) });
const { apiKey, agentId } = await registerAgent(svc.url);
await createCredits({ store: createBillingStore(svc.svc.database), clock: systemClock }).add(agentId, { kind: 'grant', units: 1_000_000_000, ref: 'bench-grant' });
const url = `${svc.url}/v1/search?q=${encodeURIComponent('benchmark query')}&num_results=10`;
const headers = { authorization: `Bearer ${apiKey}` };
await fetch(url, { headers });
await drive('warmup', { url, duration: 2, headers });
console.log(await drive('GET /v1/search', { url, headers, duration: Number(process.env.SECONDS ?? 6) }));
await svc.close();
await brave.close();
