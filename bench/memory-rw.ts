import { drive, putRequests, registerAgent, report, startBaseline, startSvc } from './harness';

/**
 * GET /v1/memory/{key} and PUT /v1/memory/{key} (durable: SQLite WAL, synchronous=FULL, one
 * transaction per write) against a bare Fastify route, same process, same run. Targets: GET ≥ 50%,
 * PUT ≥ 30% of the bare route. Rate limit off; the agent is on the uncapped `pro` tier so the write
 * cap never answers 429. `--metering` keeps billing's per-write charge on (default off: ledger only).
 *
 * `--stmt-cache` is an experiment: it wraps the SQLite connection's prepare() with a cache keyed by
 * SQL text (better-sqlite3 statements are reusable), to measure what such a cache in
 * src/infra/db/database.ts would give every route.
 *
 *   npx tsx bench/memory-rw.ts [--metering] [--embeddings] [--stmt-cache]
 */
const metering = process.argv.includes('--metering');
const embeddings = process.argv.includes('--embeddings');
const baseline = await startBaseline();
const svc = await startSvc({
  SVC_MEMORY_RATE_PER_MINUTE: '0', SVC_EMBEDDINGS: embeddings ? 'local' : 'none', SVC_METERING_ENABLED: String(metering),
});
if (process.argv.includes('--stmt-cache')) {
  const conn = svc.svc.database.sqlite!;
  const prepare = conn.prepare.bind(conn);
  const cache = new Map<string, ReturnType<typeof prepare>>();
  (conn as { prepare: typeof prepare }).prepare = ((source: string) => {
    let st = cache.get(source);
    if (!st) cache.set(source, (st = prepare(source)));
    return st;
  }) as typeof prepare;
}
try {
  const { apiKey, agentId } = await registerAgent(svc.url);
  await svc.svc.database.db.updateTable('agents').set({ tier: 'pro' }).where('agent_id', '=', agentId).execute();
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const value = { note: 'The staging database moved to db-2.internal; backups run nightly at 02:00 UTC.', tags: ['infra', 'db'], n: 42 };
  await fetch(`${svc.url}/v1/memory/bench.read`, { method: 'PUT', headers, body: JSON.stringify({ value, importance: 'high' }) });

  const putOpts = { url: svc.url, method: 'PUT' as const, headers, requests: putRequests('bench.w.', 2000, (n) => ({ ...value, n })) };
  await drive('warmup', { url: `${baseline.url}/bare`, duration: 2 });
  await drive('warmup', { url: `${svc.url}/v1/memory/bench.read`, headers, duration: 2 });
  await drive('warmup', { ...putOpts, duration: 2 });

  const b1 = await drive('bare Fastify route', { url: `${baseline.url}/bare` });
  const get = await drive('GET /v1/memory/{key}', { url: `${svc.url}/v1/memory/bench.read`, headers });
  const put = await drive(`PUT /v1/memory/{key} (durable${metering ? ', metered' : ''}${embeddings ? ', outbox + local model' : ''})`, putOpts);
  const b2 = await drive('bare Fastify route', { url: `${baseline.url}/bare` });
  const base = { ...b1, requestsPerSecond: Math.round((b1.requestsPerSecond + b2.requestsPerSecond) / 2) };
  console.log(`baseline runs: ${b1.requestsPerSecond} and ${b2.requestsPerSecond} req/s`);
  console.log(report(base, get));
  console.log(report(base, put));
} finally {
  await svc.close();
  await baseline.close();
}
