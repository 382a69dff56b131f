/**
 * The same requests against this checkout and an older one, both in this process, in the same run:
 * authenticated GET /v1/me, GET /v1/memory/{key} and durable PUT /v1/memory/{key} (5,000 keys of
 * note-like text, cycled; then 5,000 other keys, each written once first, with a new text in every
 * write and the keys spread; the agent on an uncapped tier) (req/s over loopback, autocannon),
 * rounds with the order rotated, the median of the per-round ratios new ÷ old. For a change that
 * should cost nothing on the hot paths (response schemas and their compiled serialisers: target ≥
 * 100 %), or little on writes (the lexical index: target ≥ 90 %). Both run the local embedder's
 * outbox writes; its background loop does not run during the rounds. `ONLY=changed` runs only the
 * workloads whose name holds that text.
 *
 *   git worktree add /tmp/svc-base <commit> && ln -s "$PWD/node_modules" /tmp/svc-base/node_modules
 *   BASE=/tmp/svc-base npx tsx bench/versus.ts     # ROUNDS (default 5), SECONDS (default 5)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type autocannon from 'autocannon';
import type { Kysely } from 'kysely';
import { drive, interleaved, median, percent, putRequests, registerAgent, type Measured } from './harness';

const BASE = process.env.BASE;
if (!BASE) throw new Error('BASE=<path of the older checkout> is required');
/** Only the workloads whose name contains this (e.g. `changed`). */
const ONLY = process.env.ONLY ?? '';
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const SECONDS = Number(process.env.SECONDS ?? 5);

type Started = { label: string; url: string; db: Kysely<{ agents: { agent_id: string; tier: string } }>; close(): Promise<void> };

async function start(root: string, label: string): Promise<Started> {
  const { buildApp } = (await import(join(root, 'src/app.ts'))) as typeof import('../src/app');
  const { loadConfig } = (await import(join(root, 'src/config.ts'))) as typeof import('../src/config');
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-versus-'));
  const config = loadConfig({
    SVC_DATA_DIR: dataDir, LOG_LEVEL: 'silent', PORT: '0', SVC_MEMORY_RATE_PER_MINUTE: '0', SVC_METERING_ENABLED: 'false', SVC_MEMORY_INDEX_INTERVAL_MS: '600000',
  });
  const svc = await buildApp({ config, logger: false });
  const url = await svc.app.listen({ host: '127.0.0.1', port: 0 });
  return {
    label, url, db: svc.database.db as unknown as Kysely<{ agents: { agent_id: string; tier: string } }>,
    async close() {
      await svc.app.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const checkouts = [await start(resolve(BASE), 'old'), await start(resolve('.'), 'new')];
try {
  const subjects: (() => Promise<Measured>)[] = [];
  for (const c of checkouts) {
    const { apiKey, agentId } = await registerAgent(c.url, `versus-${c.label}`);
    await c.db.updateTable('agents').set({ tier: 'pro' }).where('agent_id', '=', agentId).execute();
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    const put = await fetch(`${c.url}/v1/memory/profile.settings`, {
      method: 'PUT', headers, body: JSON.stringify({ value: { theme: 'dark', locale: 'pt-PT', notes: ['a', 'b', 'c'], limits: { daily: 20 } }, importance: 'high' }),
    });
    if (!put.ok) throw new Error(`PUT on ${c.label}: ${put.status} ${await put.text()}`);
    for (const [path, name] of [['/v1/me', 'GET /v1/me'], ['/v1/memory/profile.settings', 'GET /v1/memory/{key}']] as const) {
      const opts = { url: `${c.url}${path}`, headers: { authorization: headers.authorization }, duration: SECONDS };
      await drive('warm-up', { ...opts, duration: 2 });
      if (name.includes(ONLY)) subjects.push(() => drive(`${name} ${c.label}`, opts));
    }
    const requests = putRequests('notes.n', 5000, (i) => ({ text: `Deploy of billing-api ${i} moved to Thursday after the ${i % 7 ? 'load' : 'smoke'} test on host web-${i % 13}`, seq: i }));
    const opts = { url: c.url, headers, requests, duration: SECONDS };
    await drive('warm-up', { ...opts, duration: 2 });
    if ('PUT /v1/memory/{key}'.includes(ONLY)) subjects.push(() => drive(`PUT /v1/memory/{key} ${c.label}`, opts));
    // 5,000 other keys, each write's text new and its key spread over them (a counter put in by
    // autocannon's setupRequest, ~26 µs per request on this thread, paid alike by both checkouts):
    // every PUT re-indexes its words and queues an embedding. Above, the connections cycle the same
    // 5,000 values in step, so most writes repeat the text already stored and the writes in flight
    // at one time often share a key.
    let run = 0;
    const changing = putRequests('notes.c', 1, () => null).map((r) => ({
      ...r,
      setupRequest: (req: autocannon.Request): autocannon.Request => {
        const i = (++run * 2_654_435_761) % 5000;
        return { ...req, path: `/v1/memory/notes.c${i}`, body: JSON.stringify({ value: { text: `Deploy of billing-api ${i} moved to Thursday after run ${run} on host web-${i % 13}`, seq: i } }) };
      },
    }));
    const changed = { url: c.url, headers, requests: changing, duration: SECONDS };
    // Every key written once first, so the rounds change stored values rather than add keys.
    let fill = 0;
    const filling = changing.map((r) => ({ ...r, setupRequest: (req: autocannon.Request) => ({ ...req, path: `/v1/memory/notes.c${fill++ % 5000}`, body: JSON.stringify({ value: { text: `first ${fill}` } }) }) }));
    await drive('fill', { url: c.url, headers, requests: filling, amount: 5000 });
    await drive('warm-up', { ...changed, duration: 2 });
    if ('PUT /v1/memory/{key}, changed value'.includes(ONLY)) subjects.push(() => drive(`PUT /v1/memory/{key}, changed value ${c.label}`, changed));
  }
  const per = subjects.length / checkouts.length;
  const rounds = await interleaved(subjects, ROUNDS);
  for (const r of rounds[0]!.map((_, i) => i).slice(0, per)) {
    const old = r;
    const neu = r + per;
    const ratios = rounds.map((row) => row[neu]!.requestsPerSecond / row[old]!.requestsPerSecond).sort((a, b) => a - b);
    const name = rounds[0]![old]!.name.replace(/ old$/, '');
    const oldRps = median(rounds.map((row) => row[old]!.requestsPerSecond));
    const newRps = median(rounds.map((row) => row[neu]!.requestsPerSecond));
    const bad = rounds.some((row) => row[old]!.non2xx + row[neu]!.non2xx + row[old]!.errors + row[neu]!.errors > 0);
    console.log(`${name}: new ${newRps} req/s vs old ${oldRps} req/s (medians); new ÷ old per round ${ratios.map(percent).join(', ')}; median ${percent(median(ratios))}${bad ? ' (non-2xx or errors seen!)' : ''}`);
  }
} finally {
  for (const c of checkouts) await c.close();
}
