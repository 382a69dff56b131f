/**
 * `npm run bench -- <name> [args]` runs one benchmark of this folder (`npm run bench` lists them).
 * Each prints its figure as a ratio against a baseline measured in the same run.
 *
 * `npm run bench -- all [name ...]` runs every benchmark (or the named ones) one after the other in
 * a short mode (fewer rounds, smaller documents, fewer memories) and prints one markdown table:
 * benchmark, what is compared, the figure, the target. Each benchmark's own output goes to stderr
 * as it finishes, the table alone to stdout (`npm run bench -- all > figures.md`). The short mode's
 * settings are environment variables and arguments per benchmark (SHORT below); a variable already
 * set in the environment wins, so `ROUNDS=10 npm run bench -- all search-cached` runs it longer.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('.', import.meta.url));
const names = readdirSync(dir).filter((f) => f.endsWith('.ts') && !['run.ts', 'harness.ts', 'parse-fixtures.ts'].includes(f)).map((f) => f.replace(/\.ts$/, ''));

interface Short {
  /** What the figure compares (one line). */
  compares: string;
  target?: string;
  args?: string[];
  env?: Record<string, string>;
  /** The figure, read from the benchmark's output. */
  figure(out: string): string;
}

/** The first capture of `re` in `out`, or `?` when the output has no such line. */
const grab = (out: string, re: RegExp) => re.exec(out)?.[1] ?? '?';
const grabAll = (out: string, re: RegExp) => [...out.matchAll(re)].map((m) => m[1]);

const SHORT: Record<string, Short> = {
  me: {
    compares: 'authenticated `GET /v1/me` vs a bare Fastify route (req/s)',
    target: '≥ 60 %',
    figure: (o) => `${grab(o, /ratio ([\d.]+%)/)}`,
  },
  'memory-rw': {
    compares: '`GET` / durable `PUT /v1/memory/{key}` vs a bare Fastify route (req/s)',
    target: 'GET ≥ 50 %, PUT ≥ 30 %',
    figure: (o) => { const [g, p] = grabAll(o, /ratio ([\d.]+%)/g); return `GET ${g ?? '?'}, PUT ${p ?? '?'}`; },
  },
  'memory-mixed': {
    compares: '`GET /v1/me` (2 connections) while 8 connections `PUT` memory: reads not stalled by write flushes',
    figure: (o) => `GET ${grab(o, /meanwhile: (\d+ req\/s)/)}, p99 ${grab(o, /meanwhile: .*?p99 ([\d.]+ ms)/)}; PUT ${grab(o, /PUT [^:]*: (\d+ req\/s)/)}`,
  },
  'memory-wal-frames': {
    compares: 'SQLite WAL frames per memory `PUT`, metered vs unmetered (a count, not a speed)',
    figure: (o) => `unmetered ${grab(o, /unmetered ([\d.]+)/)}, metered ${grab(o, /metered ([\d.]+) \(/)}`,
  },
  metering: {
    compares: 'metered vs unmetered `PUT /v1/memory/{key}` (req/s, median of A/B pairs)',
    target: '≥ 87 % (≤ 15 % added cost)',
    env: { PAIRS: '4', SECONDS: '2' },
    figure: (o) => grab(o, /median pair ratio ([\d.]+%)/),
  },
  'metering-charge': {
    compares: 'billing\'s charge alone vs a bare insert+commit; CPU of a charge held by a write batch',
    env: { N: '300', BATCHES: '600' },
    figure: (o) => {
      const seq = grabAll(o, /^\|[^|]+\|[^|]+\|[^|]+\| ([\d.]+) \|/gm).at(-1);
      const held = grabAll(o, /^\|[^|]+\| [\d.]+ \| [\d.]+ \| ([\d.]+) \|$/gm).at(-1);
      return `sequential ${seq ?? '?'}×; ${held ?? '?'} µs CPU per held charge`;
    },
  },
  'search-cached': {
    compares: 'cached paid `GET /v1/search` vs a bare Fastify route (req/s, median of rotated rounds)',
    target: '≥ 40 %',
    env: { ROUNDS: '3', SECONDS: '2' },
    figure: (o) => grab(o, /median round ratio ([\d.]+%)/),
  },
  startup: {
    compares: 'time from spawning svc as `npm start` does (its build up to date) to the first `/health` 200 and idle RSS, empty directory and 100,000 memories, beside a bare Fastify app on plain Node',
    target: '< 3 s; idle RSS < 200 MiB',
    env: { MEMORIES: '10000', ROUNDS: '3' },
    figure: (o) => [...o.matchAll(/^\| ([^|]+?) \| ([\d.]+ s) \| [^|]+ \| ([^|]+?) \| (\d+ MiB) \|.*$/gm)].map((m) => `${m[1]}: ${m[2]} (${m[3]} a bare app), ${m[4]}`).join('; ') || '?',
  },
  'stake-search': {
    compares: 'cached paid `GET /v1/search` by an agent holding a stake vs one without (req/s, median of rotated rounds)',
    target: '≈ 100 % (no added cost)',
    env: { ROUNDS: '3', SECONDS: '2' },
    figure: (o) => grab(o, /median round ratio ([\d.]+%)/),
  },
  trust: {
    compares: 'interaction ratings vs durable memory `PUT` (req/s); passport read with 10k events and inclusion proof in a 1M log (p95); parity of 100k entries (s)',
    target: 'ratings ≥ 40 %; p95 < 5 ms; parity < 30 s',
    env: { EVENTS: '2000', LOG_SIZE: '100000', PARITY_SIZE: '10000', SECONDS: '3' },
    figure: (o) => `ratings ${grab(o, /ratio ([\d.]+%)/)}; passport p95 ${grab(o, /passport GET[^:]*: p95 ([\d.]+ ms)/)}; proof p95 ${grab(o, /inclusion proof[^:]*: p95 ([\d.]+ ms)/)}; parity ${grab(o, /parity check of \d+ entries: ([\d.]+ s)/)}`,
  },
  directory: {
    compares: '`GET /v1/agents` page of 20 at 100,000 agents / 10,000 listed (first, deep and filtered pages; p95) vs a passport read in the same run',
    target: 'p95 < 10 ms',
    env: { N: '500' },
    figure: (o) => `p95 ${grab(o, /directory page \([^)]*\): p50 [\d.]+ ms, p95 ([\d.]+ ms)/)} (passport p95 ${grab(o, /passport GET \(baseline\): p50 [\d.]+ ms, p95 ([\d.]+ ms)/)}; ${grab(o, /ratio p95 directory \/ passport ([\d.]+×)/)})`,
  },
  'scoped-keys': {
    compares: '`GET /v1/memory/{key}` with a scoped key (svc:memory) vs the root key: CPU per request (median of sets, beside a root ÷ root control), token cache on and off',
    target: '≤ 105 %',
    env: { SETS: '100', ROUNDS: '2', SECONDS: '2' },
    figure: (o) => { const [on, off] = grabAll(o, /CPU median set ratio ([\d.]+%)/g); const [c1, c2] = grabAll(o, /control root ÷ root ([\d.]+%)/g); return `cache on ${on ?? '?'} (control ${c1 ?? '?'}), cache off ${off ?? '?'} (control ${c2 ?? '?'})`; },
  },
  'browse-static': {
    compares: '`POST /v1/browse` of a local 3–5 KiB page vs a direct fetch + the same extraction (time)',
    target: '≤ 1.2×',
    env: { ROUNDS: '60', WARM: '60' },
    figure: (o) => `end to end ${grab(o, /ratio \(median\) ([\d.]+x)/)}, svc's own time ${grab(o, /svc's own time.*?ratio ([\d.]+x)/)}`,
  },
  'blob-io': {
    compares: 'filesystem blob store vs a plain copy with fsync / a plain read (CPU and wall time)',
    target: '≤ 2×',
    args: ['--mb', '20', '--runs', '3'],
    figure: (o) => `CPU: upload ${grab(o, /cpu ratio upload store \/ stream copy\+fsync: ([\d.]+)/)}×, read ${grab(o, /read store \/ plain: ([\d.]+)/)}×; ` +
      `wall: upload ${grab(o, /^ratio upload store \/ stream copy\+fsync: ([\d.]+)/m)}×, read ${grab(o, /ratio read store \/ plain stream: +([\d.]+)/)}×`,
  },
  'blob-transfer': {
    compares: 'blob upload / download over HTTP vs a file copy with fsync / a stream copy (time)',
    target: '≤ 2×, flat memory',
    args: ['--mb', '20', '--repeat', '3'],
    figure: (o) => `upload ${grab(o, /\| upload [^|]*\|[^|]*\|[^|]*\| ([\d.]+×)/)}, download ${grab(o, /\| download [^|]*\|[^|]*\|[^|]*\| ([\d.]+×)/)}`,
  },
  parse: {
    compares: 'the parser engine (in process, child process, thread) vs pdfjs / exceljs called directly (speed)',
    args: ['--pages', '50', '--rows', '10000', '--repeat', '3'],
    figure: (o) => { const [p, x] = grabAll(o, /parseDocument, process, warm .* ([\d.]+)$/gm); return `warm child process: PDF ${p ?? '?'}, XLSX ${x ?? '?'}`; },
  },
  'parse-service': {
    compares: '`POST /v1/blobs/{id}/parse` vs pdfjs / exceljs called directly (pages/s, rows/s)',
    target: '≥ 80 %',
    args: ['--pages', '50', '--rows', '10000', '--repeat', '3'],
    figure: (o) => { const [p, x] = grabAll(o, /\| (\d+ %) \|$/gm); return `PDF ${p ?? '?'}, XLSX ${x ?? '?'}`; },
  },
  extraction: {
    compares: 'main-text shingle F1 and titles right on the 49-page self-made article corpus vs readability.js alone and the whole `<body>`',
    target: 'F1 ≥ trafilatura (not runnable here); titles ≥ 90 %',
    figure: (o) => {
      const row = (m: string, set: string) => new RegExp(`^\\| ${m} \\| ${set} \\(\\d+\\) \\| ([\\d.]+) \\|[^|]*\\|[^|]*\\| \\d+/\\d+ \\(([\\d.]+%)\\)`, 'm').exec(o);
      const [svc, held, rd] = [row('svc', 'all'), row('svc', 'held-out'), row('readability\\.js', 'all')];
      return `F1 ${svc?.[1] ?? '?'}, titles ${svc?.[2] ?? '?'} (held-out pages: F1 ${held?.[1] ?? '?'}, titles ${held?.[2] ?? '?'}; readability.js F1 ${rd?.[1] ?? '?'}, titles ${rd?.[2] ?? '?'})`;
    },
  },
  'memory-search': {
    compares: 'semantic memory search: latency of the route and of the vector index; recall on the labelled set',
    target: 'p95 < 30 ms full, < 10 ms index (at 10,000 memories)',
    args: ['--memories', '1000', '--queries', '50'],
    figure: (o) => `full p95 ${grab(o, /full search over \d+: .*?p95 ([\d.]+ ms)/)}, index p95 ${grab(o, /index only \([^)]*\) over \d+: .*?p95 ([\d.]+ ms)/)}, ` +
      `recall@5 ${grab(o, /limit 5: .*?recall@5 ([\d.]+%)/)} (${grab(o, /stored (\d+) memories/)} memories)`,
  },
};

const [name, ...args] = process.argv.slice(2);
if (name === 'all') runAll(args.length ? args : Object.keys(SHORT));
else if (!name || !names.includes(name)) {
  process.stdout.write(`usage: npm run bench -- <name> [args]   one benchmark\n       npm run bench -- all [name ...]   all (or the named) in a short mode, as one table\n` +
    `benchmarks: ${names.join(', ')}\nfigures: bench/README.md\n`);
  process.exit(name ? 1 : 0);
} else {
  const r = spawnSync(process.execPath, ['--import', 'tsx', `${dir}${name}.ts`, ...args], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

function runAll(which: string[]): never {
  const unknown = which.filter((n) => !SHORT[n]);
  if (unknown.length) {
    process.stderr.write(`not in the short-mode set: ${unknown.join(', ')} (known: ${Object.keys(SHORT).join(', ')})\n`);
    process.exit(1);
  }
  const rows: string[] = [];
  let failed = 0;
  for (const n of which) {
    const s = SHORT[n];
    const t0 = performance.now();
    process.stderr.write(`\n### ${n} ${[...(s.args ?? []), ...Object.entries(s.env ?? {}).map(([k, v]) => `${k}=${process.env[k] ?? v}`)].join(' ')}\n`);
    const r = spawnSync(process.execPath, ['--import', 'tsx', `${dir}${n}.ts`, ...(s.args ?? [])], {
      env: { ...s.env, ...process.env }, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', maxBuffer: 64 * 2 ** 20,
    });
    const out = r.stdout ?? '';
    process.stderr.write(out);
    process.stderr.write(`(${n}: ${((performance.now() - t0) / 1000).toFixed(0)} s)\n`);
    const ok = r.status === 0;
    if (!ok) failed++;
    rows.push(`| \`${n}\` | ${s.compares} | ${ok ? s.figure(out) : `failed (exit ${r.status ?? r.signal})`} | ${s.target ?? '—'} |`);
  }
  process.stdout.write(['| benchmark | what is compared | figure | target |', '|---|---|---|---|', ...rows].join('\n') + '\n');
  process.exit(failed ? 1 : 0);
}
