import { drive, putRequests, registerAgent, startSvc } from './harness';

/** CPU profile helper: `node --cpu-prof --import tsx bench/memory-profile.ts [get|put]` drives one route for 6 s. */
const which = process.argv[2] ?? 'put';
const svc = await startSvc({ SVC_MEMORY_RATE_PER_MINUTE: '0', SVC_EMBEDDINGS: 'none', SVC_METERING_ENABLED: 'false' });
const { apiKey, agentId } = await registerAgent(svc.url);
await svc.svc.database.db.updateTable('agents').set({ tier: 'pro' }).where('agent_id', '=', agentId).execute();
const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
await fetch(`${svc.url}/v1/memory/bench.read`, { method: 'PUT', headers, body: JSON.stringify({ value: { a: 1 } }) });
const r = which === 'get'
  ? await drive('GET', { url: `${svc.url}/v1/memory/bench.read`, headers, duration: 6 })
  : await drive('PUT', { url: svc.url, method: 'PUT', headers, duration: 6, requests: putRequests('k', 2000, (n) => ({ n })) });
console.log(r);
await svc.close();
