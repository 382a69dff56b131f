/**
 * The trust log and reputation, each figure against a baseline measured in the same run:
 *
 *  1. interaction ratings (POST /v1/feedback/interaction, a trust log append with its projections,
 *     durable) vs durable memory PUTs, req/s. Target: ≥ 40 %.
 *  2. passport GET of an agent with EVENTS rated events (the reputation read from decayed
 *     projections): p95 latency, beside a bare Fastify route's p95. Target: p95 < 5 ms.
 *  3. inclusion proof (GET /v1/trust/log/proof/inclusion) in a log of LOG_SIZE entries: p95, beside
 *     the bare route's p95. Target: p95 < 5 ms at 1,000,000 entries.
 *  4. parity check (GET /admin/trust/parity-check) of PARITY_SIZE rating entries: wall time.
 *     Target: < 30 s at 100,000.
 *
 *   npx tsx bench/trust.ts            (EVENTS=10000 LOG_SIZE=1000000 PARITY_SIZE=100000 SECONDS=8)
 */
import type autocannon from 'autocannon';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import { openDatabase } from '../src/infra/db/database';
import { migrateToLatest } from '../src/infra/db/migrate';
import type { TrustLogEntriesTable, TrustLogNodesTable } from '../src/infra/db/tables/trust';
import { canonicalJson } from '../src/infra/tlog/jcs';
import { leafHash, nodeHash } from '../src/infra/tlog/merkle';
import { systemClock } from '../src/lib/clock';
import { newId } from '../src/lib/ids';
import { createTrustLog, entryObject } from '../src/modules/trust/log';
import { createTrustLogStore } from '../src/modules/trust/log-store';
import { ratedEvent } from '../src/modules/reputation/projection';
import { createReputationStore } from '../src/modules/reputation/store';
import { drive, putRequests, registerAgent, report, startBaseline, startSvc } from './harness';

const EVENTS = Number(process.env.EVENTS ?? 10_000);
const LOG_SIZE = Number(process.env.LOG_SIZE ?? 1_000_000);
const PARITY_SIZE = Number(process.env.PARITY_SIZE ?? 100_000);
const SECONDS = Number(process.env.SECONDS ?? 8);
const ADMIN = 'bench-admin-key';

const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)];

/** Latencies of `n` sequential GETs (ms). */
async function latencies(url: string, n: number, headers: Record<string, string> = {}): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await fetch(url, { headers });
    await r.arrayBuffer();
    if (!r.ok) throw new Error(`${url}: ${r.status}`);
    out.push(performance.now() - t0);
  }
  return out;
}

const baseline = await startBaseline();
const svc = await startSvc({ SVC_MEMORY_RATE_PER_MINUTE: '0', SVC_EMBEDDINGS: 'none', SVC_INTERACTION_RATINGS_PER_DAY: '1000000', SVC_ADMIN_KEY: ADMIN });
try {
  // ---- 1. ratings vs memory PUTs ----
  const rater = await registerAgent(svc.url, 'bench-rater');
  const subject = await registerAgent(svc.url, 'bench-subject');
  await svc.svc.database.db.updateTable('agents').set({ tier: 'pro' }).where('agent_id', '=', rater.agentId).execute();
  const headers = { authorization: `Bearer ${rater.apiKey}`, 'content-type': 'application/json' };
  const putOpts = { url: svc.url, method: 'PUT' as const, headers, requests: putRequests('bench.w.', 2000, (n) => ({ note: 'a durable memory write', n })) };
  // Every request is a new rating (no idempotent repeats): each body is built as it is sent, a cost
  // (~26 µs, bench/harness.ts) the PUTs' prebuilt requests do not pay, so the ratio errs low.
  let refs = 0;
  const rateOpts = {
    url: svc.url, headers,
    requests: [{
      method: 'POST' as const, path: '/v1/feedback/interaction',
      setupRequest: (req: autocannon.Request): autocannon.Request => ({
        ...req, body: JSON.stringify({ subject_agent_id: subject.agentId, ref_type: 'task', ref_id: `t-${refs++}`, outcome: 'approved', category: 'accuracy' }),
      }),
    }],
  };
  await drive('warmup', { ...putOpts, duration: 2 });
  await drive('warmup', { ...rateOpts, duration: 2 });
  const put = await drive('PUT /v1/memory/{key} (durable)', { ...putOpts, duration: SECONDS });
  const before = Number((await svc.svc.database.db.selectFrom('trust_log_head').select('size').executeTakeFirstOrThrow()).size);
  const rating = await drive('POST /v1/feedback/interaction (durable log append)', { ...rateOpts, duration: SECONDS });
  const appended = Number((await svc.svc.database.db.selectFrom('trust_log_head').select('size').executeTakeFirstOrThrow()).size) - before;
  console.log(`log entries appended during the run: ${appended} (${Math.round(appended / SECONDS)}/s; every answered request is a new entry)`);
  console.log(report(put, rating));
  if (rating.non2xx > 0) throw new Error('ratings answered non-2xx: every request must be a new rating');

  // ---- 2. passport read of an agent with EVENTS events ----
  const eventsOf = async () => Number((await svc.svc.database.db.selectFrom('reputation_events').select((eb) => eb.fn.countAll<number>().as('n'))
    .where('subject_agent_id', '=', subject.agentId).where('ref_id', 'like', 't-%').executeTakeFirstOrThrow()).n);
  const have = await eventsOf();
  if (have < EVENTS) await drive('top up', { ...rateOpts, amount: EVENTS - have, connections: 4, duration: 3600 });
  const events = await eventsOf();
  await latencies(`${svc.url}/v1/agents/${subject.agentId}/passport`, 200);
  const bare = await latencies(`${baseline.url}/bare`, 2000);
  const pass = await latencies(`${svc.url}/v1/agents/${subject.agentId}/passport`, 2000);
  console.log(`passport GET, ${events} events: p95 ${p95(pass).toFixed(2)} ms (bare route p95 ${p95(bare).toFixed(2)} ms) → target < 5 ms`);
} finally {
  await svc.close();
}

// ---- 3. inclusion proofs in a log of LOG_SIZE entries (built in bulk: entries and every complete subtree) ----
{
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-tlog-'));
  try {
    const h = openDatabase({ dataDir, poolMax: 1 });
    await migrateToLatest(h.db);
    const t0 = performance.now();
    const stack: { level: number; hash: Buffer }[] = [];
    const BATCH = 5000;
    for (let start = 0; start < LOG_SIZE; start += BATCH) {
      const entries: TrustLogEntriesTable[] = [];
      const nodes: TrustLogNodesTable[] = [];
      for (let i = start; i < Math.min(LOG_SIZE, start + BATCH); i++) {
        const bytes = canonicalJson(entryObject(i, { kind: 'epoch.opened', agentId: newId(), epoch: 1, data: { opened_by: 'registration' } }, 1_790_000_000_000 + i));
        const leaf = leafHash(bytes);
        entries.push({ log_index: i, kind: 'epoch.opened', agent_id: null, epoch: 1, entry: bytes.toString('utf8'), leaf_hash: leaf.toString('hex'), created_at: 1_790_000_000_000 + i });
        let node = { level: 0, hash: leaf };
        nodes.push({ level: 0, idx: i, hash: leaf.toString('hex') });
        while (stack.length > 0 && stack[stack.length - 1].level === node.level) {
          const left = stack.pop() as { level: number; hash: Buffer };
          node = { level: node.level + 1, hash: nodeHash(left.hash, node.hash) };
          nodes.push({ level: node.level, idx: Math.floor(i / 2 ** node.level), hash: node.hash.toString('hex') });
        }
        stack.push(node);
      }
      await h.db.transaction().execute(async (trx) => {
        for (let k = 0; k < entries.length; k += 500) await trx.insertInto('trust_log_entries').values(entries.slice(k, k + 500)).execute();
        for (let k = 0; k < nodes.length; k += 500) await trx.insertInto('trust_log_nodes').values(nodes.slice(k, k + 500)).execute();
      });
    }
    await h.db.updateTable('trust_log_head').set({ size: LOG_SIZE }).where('id', '=', 1).execute();
    await h.close();
    console.log(`built a log of ${LOG_SIZE} entries in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const config = loadConfig({ SVC_DATA_DIR: dataDir, LOG_LEVEL: 'silent', PORT: '0', SVC_EMBEDDINGS: 'none' });
    const app = await buildApp({ config, logger: false });
    const url = await app.app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const base = await latencies(`${baseline.url}/bare`, 2000);
      const lat: number[] = [];
      for (let i = 0; i < 2000; i++) {
        const index = Math.floor(Math.random() * LOG_SIZE);
        lat.push(...await latencies(`${url}/v1/trust/log/proof/inclusion?index=${index}&tree_size=${LOG_SIZE}`, 1));
      }
      console.log(`inclusion proof, log of ${LOG_SIZE}: p95 ${p95(lat).toFixed(2)} ms (bare route p95 ${p95(base).toFixed(2)} ms) → target < 5 ms`);
    } finally {
      await app.app.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

// ---- 4. parity check of PARITY_SIZE rating entries (written through the log and the reputation store) ----
{
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-parity-'));
  try {
    const h = openDatabase({ dataDir, poolMax: 1 });
    await migrateToLatest(h.db);
    const log = await createTrustLog({ store: createTrustLogStore(h.db, h.engine), clock: systemClock, origin: 'bench/trust-log', checkpointIntervalMs: 1000, commits: h.commits });
    const rep = createReputationStore(h.db, h.engine);
    const subjects = Array.from({ length: 200 }, () => newId());
    const t0 = performance.now();
    for (let start = 0; start < PARITY_SIZE; start += 1000) {
      await h.db.transaction().execute(async (trx) => {
        for (let i = start; i < Math.min(PARITY_SIZE, start + 1000); i++) {
          const at = 1_790_000_000_000 + i * 60_000;
          const row = {
            event_id: newId(), log_index: 0, subject_agent_id: subjects[i % subjects.length], epoch: 1, rater_agent_id: `rater-${i % 97}`, ref_type: 'task',
            ref_id: `t-${i}`, outcome: i % 5 === 0 ? 'error' : 'approved', category: (['accuracy', 'task_completion', 'responsiveness'] as const)[i % 3],
            note: null, rater_weight: i % 2 ? 1 : 0.5, created_at: at, suppressed_at: null,
          };
          const appended = await log.append(trx, {
            kind: 'reputation.interaction', agentId: row.subject_agent_id, epoch: 1, at,
            data: { event_id: row.event_id, rater_agent_id: row.rater_agent_id, ref_type: row.ref_type, ref_id: row.ref_id, outcome: row.outcome, category: row.category, rater_weight: row.rater_weight, note_sha256: null },
          });
          row.log_index = appended.index;
          await rep.insertEvent(trx, row);
          await rep.project(trx, ratedEvent(row), 1);
        }
      });
    }
    await h.close();
    console.log(`wrote ${PARITY_SIZE} ratings through the log in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const config = loadConfig({ SVC_DATA_DIR: dataDir, LOG_LEVEL: 'silent', PORT: '0', SVC_EMBEDDINGS: 'none', SVC_ADMIN_KEY: ADMIN });
    const app = await buildApp({ config, logger: false });
    try {
      const t1 = performance.now();
      const r = await app.app.inject({ method: 'GET', url: '/admin/trust/parity-check', headers: { 'x-admin-key': ADMIN } });
      const body = JSON.parse(r.body) as { ok: boolean; mismatch_count: number; entries_replayed: number };
      const seconds = (performance.now() - t1) / 1000;
      if (!body.ok) throw new Error(`parity found ${body.mismatch_count} mismatches`);
      console.log(`parity check of ${body.entries_replayed} entries: ${seconds.toFixed(1)} s → target < 30 s`);
    } finally {
      await app.app.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
await baseline.close();
