/**
 * The public directory, GET /v1/agents, at scale, against baselines measured in the same run:
 *
 *   AGENTS registered agents (default 100,000), LISTED of them listed (default 10,000), seeded
 *   straight into the database (agents, passports, epochs, rank rows, reputation aggregates and day
 *   buckets, vouches) — not through HTTP, to keep the set-up short. Then sequential GETs of a page of
 *   20: the first page, deep pages (cursors taken along one walk), and filtered pages (agent_type,
 *   domain, bridge_only). p95 of each, beside the p95 of a public passport read (GET
 *   /v1/agents/{id}/passport, the route a directory row links to), of GET /health and of a bare
 *   Fastify route. Target: directory page p95 < 10 ms at 100,000 agents / 10,000 listed.
 *
 *   npx tsx bench/directory.ts          (AGENTS=100000 LISTED=10000 N=2000)
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/directory.ts   (a fresh database on that server)
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { sql } from 'kysely';
import pg from 'pg';
import type { AgentsTable, PassportsTable } from '../src/infra/db/tables/core';
import type { AgentEpochsTable, DirectoryRanksTable, ReputationAggregatesTable, ReputationDayBucketsTable } from '../src/infra/db/tables/trust';
import { generateEd25519 } from '../src/lib/ed25519';
import { startBaseline, startSvc } from './harness';

const AGENTS = Number(process.env.AGENTS ?? 100_000);
const LISTED = Number(process.env.LISTED ?? 10_000);
const N = Number(process.env.N ?? 2000);
const DAY = 86_400_000;

const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)];
const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.5)];

/** Latencies (ms) of sequential GETs, cycling through `urls`. */
async function latencies(urls: string[], n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const url = urls[i % urls.length];
    const t0 = performance.now();
    const r = await fetch(url);
    await r.arrayBuffer();
    if (!r.ok) throw new Error(`${url}: ${r.status}`);
    out.push(performance.now() - t0);
  }
  return out;
}

// PostgreSQL: a fresh database on the given server, dropped at the end.
let dropDb: (() => Promise<void>) | undefined;
const env: Record<string, string> = { SVC_EMBEDDINGS: 'none', SVC_DIRECTORY_REFRESH_SECONDS: '86400' };
if (process.env.DATABASE_URL) {
  const name = `svc_bench_dir_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(process.env.DATABASE_URL);
  url.pathname = `/${name}`;
  env.DATABASE_URL = url.toString();
  dropDb = async () => {
    const a = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await a.connect();
    await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await a.end();
  };
}

const baseline = await startBaseline();
const svc = await startSvc(env);
const db = svc.svc.database.db;
try {
  // ---- seed ----
  const t0 = performance.now();
  const now = Date.now();
  const pem = generateEd25519().publicKeyPem;
  const types = ['assistant', 'research', 'coding', 'support', 'data', 'ops', 'writer', 'translator'];
  const domains = ['finance', 'legal', 'health', 'devops', 'education', 'retail', 'science', 'media', 'travel', 'security', 'energy', 'games'];
  const listedIds: string[] = [];
  const BATCH = 400;
  let version = 0;
  for (let start = 0; start < AGENTS; start += BATCH) {
    const agents: AgentsTable[] = [];
    const passports: PassportsTable[] = [];
    const epochs: AgentEpochsTable[] = [];
    const ranks: DirectoryRanksTable[] = [];
    const aggregates: ReputationAggregatesTable[] = [];
    const buckets: ReputationDayBucketsTable[] = [];
    for (let i = start; i < Math.min(AGENTS, start + BATCH); i++) {
      const id = randomUUID();
      const created = now - 400 * DAY + i * 300_000;
      // One agent in AGENTS / LISTED is listed (spread over the ages).
      const listed = i % Math.max(1, Math.floor(AGENTS / LISTED)) === 0 && listedIds.length < LISTED;
      const k = listedIds.length;
      const type = types[k % types.length];
      const domain = domains[(k * 7 + (k >> 3)) % domains.length];
      const card = listed && i % 7 === 0 ? `https://cards.example.com/${id}.json` : null;
      agents.push({
        agent_id: id, agent_name: `bench-agent-${i}`, owner_identifier: `owner-${i}@bench.example`, tier: i % 11 === 0 ? 'pro' : 'free',
        status: 'active', frozen: 0, referral_agent: null, registration_source: null, agent_card_url: card, affiliation: null, created_at: created, updated_at: created,
      });
      passports.push({
        agent_id: id, public_key_pem: pem, derivation_method: 'operator_derived', key_algorithm: 'ed25519', created_at: created, revoked_at: null,
        bio: listed ? `Bench agent ${i}: answers questions about ${domain}.` : null, skills: listed ? JSON.stringify([type, domain, 'sql']) : '[]',
        listed: listed ? 1 : 0, sub_signal_visibility: i % 3 === 0 ? 'aggregate_only' : 'decomposed', self_reported_capabilities: null,
        agent_type: listed ? type : null, domain: listed ? domain : null,
      });
      epochs.push({ agent_id: id, epoch: 1, opened_at: created, opened_by: 'registration', closed_at: null, open_log_index: null });
      if (listed) {
        listedIds.push(id);
        // Two thirds of listed agents have ratings: decayed sums as of a few days ago.
        const rated = i % 3 !== 2;
        const a = rated ? (i % 17) * 0.7 : 0;
        const b = rated ? (i % 5) * 0.6 : 0;
        const refAt = now - (i % 20) * DAY;
        const score = (1 + a) / (2 + a + b);
        version++;
        ranks.push({
          agent_id: id, valid_from: version, valid_to: null, closed_at: null, order_score: 1_000_000 - Math.round(score * 1_000_000), created_at: created,
          score_at: refAt, agent_name: `bench-agent-${i}`, bio: `Bench agent ${i}: answers questions about ${domain}.`, skills: JSON.stringify([type, domain, 'sql']),
          agent_type: type, domain, agent_card_url: card, bridge: card ? 1 : 0, synthetic: 0,
        });
        if (rated) {
          for (const category of ['all', 'accuracy']) {
            aggregates.push({ agent_id: id, epoch: 1, category, alpha_sum: a, beta_sum: b, ref_at: refAt, event_count: 6, signal_count: 6, last_event_at: refAt });
          }
          for (let d = 0; d < 3; d++) {
            const day = Math.floor((now - (d * 11 + 2) * DAY) / DAY) * DAY;
            buckets.push({ agent_id: id, epoch: 1, category: 'accuracy', day_start: day, approved_w: 1, approved_wt: 3_600_000, error_w: 0.5, error_wt: 1_800_000, rejected_w: 0, rejected_wt: 0, n: 2 });
          }
        }
      }
    }
    await db.transaction().execute(async (trx) => {
      await trx.insertInto('agents').values(agents).execute();
      await trx.insertInto('passports').values(passports).execute();
      await trx.insertInto('agent_epochs').values(epochs).execute();
      if (ranks.length) await trx.insertInto('directory_ranks').values(ranks).execute();
      if (aggregates.length) await trx.insertInto('reputation_aggregates').values(aggregates).execute();
      if (buckets.length) await trx.insertInto('reputation_day_buckets').values(buckets).execute();
    });
  }
  // Some vouches, and history rows a busy directory carries (closed versions not yet pruned).
  const vouches = listedIds.slice(0, 2000).map((target, i) => ({
    vouch_id: randomUUID(), target_agent_id: target, voucher_agent_id: listedIds[(i + 1) % listedIds.length], skill: 'sql', epoch: 1, weight: 0.5,
    created_at: now - DAY, created_log_index: i, revoked_at: null, revoked_log_index: null,
  }));
  for (let i = 0; i < vouches.length; i += BATCH) await db.insertInto('vouches').values(vouches.slice(i, i + BATCH)).execute();
  const history = listedIds.slice(0, 2000).map((id, i) => ({
    agent_id: id, valid_from: 0, valid_to: 1 + i, closed_at: now - 60_000, order_score: 500_000, created_at: now - 400 * DAY, score_at: now - DAY,
    agent_name: 'old', bio: null, skills: '[]', agent_type: null, domain: null, agent_card_url: null, bridge: 0, synthetic: 0,
  }));
  for (let i = 0; i < history.length; i += BATCH) await db.insertInto('directory_ranks').values(history.slice(i, i + BATCH)).execute();
  await db.updateTable('directory_state').set({ version }).where('id', '=', 1).execute();
  await sql`analyze`.execute(db);
  console.log(`engine ${svc.svc.database.engine}: seeded ${AGENTS} agents, ${listedIds.length} listed, in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  // ---- the pages to read ----
  const base = `${svc.url}/v1/agents`;
  const cursors: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < LISTED / 20; page++) {
    const r = await fetch(`${base}?limit=20${cursor ? `&cursor=${cursor}` : ''}`);
    const body = await r.json() as { agents: unknown[]; next_cursor: string | null };
    if (!r.ok || body.agents.length !== 20) throw new Error(`walk page ${page}: ${r.status} ${body.agents?.length}`);
    if (!body.next_cursor) break;
    cursor = body.next_cursor;
    if (page % 25 === 0) cursors.push(cursor);
  }
  const deep = cursors.map((c) => `${base}?limit=20&cursor=${c}`);
  const filtered = [
    ...types.map((t) => `${base}?agent_type=${t}`), ...domains.map((d) => `${base}?domain=${d}`),
    `${base}?bridge_only=true`, `${base}?agent_type=coding&domain=devops`,
  ];
  const passports = listedIds.slice(0, 200).map((id) => `${svc.url}/v1/agents/${id}/passport`);

  // Warm-up, then the subjects interleaved request by request, so a busy machine weighs on all alike.
  await latencies([base, ...deep, ...filtered, ...passports, `${svc.url}/health`], 300);
  const subjects: [string, string[]][] = [
    ['bare route', [`${baseline.url}/bare`]],
    ['GET /health', [`${svc.url}/health`]],
    ['passport GET (baseline)', passports],
    ['directory first page', [`${base}?limit=20`]],
    [`directory deep pages (${deep.length} cursors along one walk)`, deep],
    [`directory filtered pages (${filtered.length} filters)`, filtered],
  ];
  const times = subjects.map(() => [] as number[]);
  for (let i = 0; i < N; i++) {
    for (let s = 0; s < subjects.length; s++) times[s].push(...await latencies([subjects[s][1][i % subjects[s][1].length]], 1));
  }
  const fmt = (name: string, xs: number[]) => `${name}: p50 ${p50(xs).toFixed(2)} ms, p95 ${p95(xs).toFixed(2)} ms`;
  subjects.forEach(([name], s) => console.log(fmt(name, times[s])));
  const [, health, passport] = times;
  const all = times.slice(3).flat();
  console.log(`load average during the run: ${loadavg().map((x) => x.toFixed(1)).join(' ')} (${cpus().length} cores)`);
  console.log(`directory page (20 rows, ${AGENTS} agents, ${listedIds.length} listed): p50 ${p50(all).toFixed(2)} ms, p95 ${p95(all).toFixed(2)} ms → target < 10 ms; `
    + `ratio p95 directory / passport ${(p95(all) / p95(passport)).toFixed(2)}×, / health ${(p95(all) / p95(health)).toFixed(2)}×`);
} finally {
  await svc.close();
  await baseline.close();
  await dropDb?.();
}
