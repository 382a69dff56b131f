/**
 * Start-up: time from spawning svc as `npm start` does (package.json's `start` script, run by
 * `sh -c` from the repository root: the build check of scripts/build.mjs, then `exec node
 * dist/main.js`) to the first 200 from GET /health, and the process's resident memory once idle, on
 *  1. an empty data directory (default settings: local embeddings, the model not loaded yet), and
 *  2. a data directory holding N memories of one agent (default 100,000), seeded beforehand through
 *     the API with embeddings off so that no backlog starts the model at start-up: this measures
 *     whether start-up does work that grows with the data (migrations, backfills, caches).
 * The build is brought up to date (untimed) before each start, which times the check, not a build.
 * Each start is paired with a baseline started in the same round: a bare Fastify app on plain Node
 * that answers /health (the floor of Node + Fastify on this machine).
 *
 *   npx tsx bench/startup.ts [--memories 100000] [--rounds 5] [--idle-ms 5000]
 *
 * Budgets (issue "start-up"): under 3 s to the first 200 on both directories; idle RSS under 200 MiB
 * with the model not loaded.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { median, registerAgent, startSvc } from './harness';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const MEMORIES = arg('--memories', Number(process.env.MEMORIES ?? 100_000));
const ROUNDS = arg('--rounds', Number(process.env.ROUNDS ?? 5));
const IDLE_MS = arg('--idle-ms', 5_000);
const log = (...a: unknown[]) => console.error(new Date().toISOString().slice(11, 19), ...a);

const root = fileURLToPath(new URL('..', import.meta.url));
/** What `npm start` runs (npm runs a script with `sh -c` in the package's directory). */
const startScript = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
const baselineFile = join(mkdtempSync(join(tmpdir(), 'svc-startup-base-')), 'bare.mjs');
writeFileSync(baselineFile, `import Fastify from ${JSON.stringify(require_resolve('fastify'))};
const app = Fastify({ logger: false });
app.get('/health', async () => ({ status: 'ok' }));
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) });
`);
function require_resolve(name: string): string {
  return new URL(import.meta.resolve(name)).pathname;
}

const rssMiB = (pid: number): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

let nextPort = 39_500;

/**
 * Spawns svc (`sh -c <start script>`; the script `exec`s node, so the child's pid is svc's) or the
 * bare app (`node <file>`), polls /health every 10 ms; time to its first 200, RSS after idling.
 */
async function start(what: 'svc' | 'bare', env: Record<string, string>): Promise<{ ms: number; rss: number }> {
  const port = nextPort++;
  const t0 = performance.now();
  const [cmd, args] = what === 'svc' ? ['/bin/sh', ['-c', startScript]] : [process.execPath, [baselineFile]];
  const child: ChildProcess = spawn(cmd, args, {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'warn', PORT: String(port), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  let ms = NaN;
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}: ${err}`);
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.status === 200, () => false);
      if (ok) {
        ms = performance.now() - t0;
        break;
      }
      if (performance.now() - t0 > 60_000) throw new Error(`no /health 200 within 60 s: ${err}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    await new Promise((r) => setTimeout(r, IDLE_MS));
    return { ms, rss: rssMiB(child.pid!) };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
  }
}

async function seed(count: number): Promise<string> {
  const svc = await startSvc({ SVC_EMBEDDINGS: 'none', SVC_MEMORY_RATE_PER_MINUTE: '0', SVC_METERING_ENABLED: 'false' });
  const dir = svc.config.core.dataDir;
  const { apiKey, agentId } = await registerAgent(svc.url, 'startup-bench');
  // The uncapped legacy `pro` tier (the free tier stops at 1,000 writes per UTC month).
  await svc.svc.database.db.updateTable('agents').set({ tier: 'pro' }).where('agent_id', '=', agentId).execute();
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const res = await fetch(`${svc.url}/v1/memory/note.${i}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ value: { text: `Note ${i}: the ${i % 97} shipment for order ${i * 7} left the warehouse on day ${i % 365}.`, n: i } }),
      });
      if (res.status !== 200 && res.status !== 201) throw new Error(`PUT ${i}: ${res.status} ${await res.text()}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  log(`seeded ${count} memories in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  // Close the app but keep its directory: the measured starts open it.
  await svc.svc.app.close();
  return dir;
}

/** Brings the build up to date (untimed), so that a measured start checks it and does not rebuild. */
const build = () => execFileSync(process.execPath, [join(root, 'scripts/build.mjs')], { cwd: root, stdio: 'inherit' });
build();
const empty = mkdtempSync(join(tmpdir(), 'svc-startup-empty-'));
const seeded = MEMORIES > 0 ? await seed(MEMORIES) : undefined;
const rows: { name: string; ms: number[]; rss: number[]; base: number[]; baseRss: number[] }[] = [
  { name: 'empty data directory', ms: [], rss: [], base: [], baseRss: [] },
  ...(seeded ? [{ name: `${MEMORIES.toLocaleString('en')} memories`, ms: [], rss: [], base: [], baseRss: [] }] : []),
];
const loads: number[] = [];
try {
  for (let r = 0; r < ROUNDS; r++) {
    for (const row of rows) {
      const dir = row === rows[0] ? empty : seeded!;
      if (row === rows[0]) rmSync(join(empty, 'svc.sqlite'), { force: true });
      const base = await start('bare', {});
      build(); // a source edited meanwhile
      const s = await start('svc', { SVC_DATA_DIR: dir, ...(row === rows[0] ? {} : { SVC_EMBEDDINGS: 'none' }) });
      row.ms.push(s.ms);
      row.rss.push(s.rss);
      row.base.push(base.ms);
      row.baseRss.push(base.rss);
      loads.push(loadavg()[0]!);
      log(`round ${r + 1} ${row.name}: ${s.ms.toFixed(0)} ms (bare ${base.ms.toFixed(0)} ms), RSS ${s.rss.toFixed(0)} MiB`);
    }
  }
} finally {
  rmSync(empty, { recursive: true, force: true });
  if (seeded) rmSync(seeded, { recursive: true, force: true });
}

console.log(`\nstart-up (median of ${ROUNDS} rounds; load average ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)} on ${process.env.NPROC ?? 'this'} machine)`);
console.log(`svc started by \`${startScript}\``);
console.log('| data | first /health 200 | bare Fastify on Node | svc ÷ bare | idle RSS | bare app\'s RSS |');
console.log('|---|---|---|---|---|---|');
for (const row of rows) {
  const ms = median(row.ms);
  const base = median(row.base);
  console.log(`| ${row.name} | ${(ms / 1000).toFixed(2)} s | ${(base / 1000).toFixed(2)} s | ${(ms / base).toFixed(2)}× | ${median(row.rss).toFixed(0)} MiB | ${median(row.baseRss).toFixed(0)} MiB |`);
}
