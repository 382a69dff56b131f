import autocannon from 'autocannon';
import { putRequests, registerAgent, startSvc } from './harness';

/**
 * Reads while writes flow: 8 connections PUT /v1/memory/{key} (durable, group commit) while 2 more
 * read GET /v1/me, at the same time, for 8 s. It shows whether the writes' disk flushes stall the
 * rest of the server: with the flush inside COMMIT (better-sqlite3 is synchronous) every fsync
 * stopped the event loop; infra/db/commit-sync.ts moves it to the thread pool. Compare commits by
 * running this file in a worktree of each, back to back.
 *
 *   npx tsx bench/memory-mixed.ts
 */
const svc = await startSvc({ SVC_MEMORY_RATE_PER_MINUTE: '0', SVC_EMBEDDINGS: 'none', SVC_METERING_ENABLED: 'false' });
try {
  const { apiKey, agentId } = await registerAgent(svc.url);
  await svc.svc.database.db.updateTable('agents').set({ tier: 'pro' }).where('agent_id', '=', agentId).execute();
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const put = { url: svc.url, method: 'PUT' as const, headers, connections: 8, requests: putRequests('k', 2000, (n) => ({ n })) };
  const me = { url: `${svc.url}/v1/me`, headers, connections: 2 };
  await Promise.all([autocannon({ ...put, duration: 2 }), autocannon({ ...me, duration: 2 })]);
  const [p, g] = await Promise.all([autocannon({ ...put, duration: 8 }), autocannon({ ...me, duration: 8 })]);
  console.log(`PUT /v1/memory/{key}: ${Math.round(p.requests.average)} req/s (p99 ${p.latency.p99} ms, non-2xx ${p.non2xx}) | ` +
    `GET /v1/me meanwhile: ${Math.round(g.requests.average)} req/s (p50 ${g.latency.p50} ms, p99 ${g.latency.p99} ms, max ${g.latency.max} ms, non-2xx ${g.non2xx})`);
} finally {
  await svc.close();
}
