/**
 * What a scoped key costs: the same request (`GET /v1/memory/{key}`, a read of one stored value)
 * made with the root key and with a scoped key holding svc:memory. Target (issue "Trust II"): a
 * scoped key costs at most 5 % more than the root key.
 *
 * Two measures, each a ratio scoped ÷ root taken in the same run:
 *
 *  1. CPU per request (the figure): batches of BATCH requests through the whole Fastify pipeline
 *     (app.inject: auth hook, scope check, route, database read, serialisation); in each of SETS
 *     sets a root batch, a scoped batch and a second root batch (the control), in an order that
 *     rotates from set to set; the CPU time this process spends per request (process.cpuUsage), and
 *     the median over the sets of scoped ÷ root and of root ÷ root (the control: the noise floor of
 *     the measure, 100 % on a quiet machine). CPU time is what a request costs the server, and other
 *     processes on a busy machine move it far less than they move throughput.
 *  2. req/s over loopback HTTP (autocannon, CONNECTIONS connections), interleaved rounds of SECONDS,
 *     the median of the per-round ratios: context, noisy on a shared 2-core machine.
 *
 * Each with the token cache on (SVC_AUTH_CACHE_MS=2000, the default: a lookup is reused and the
 * scope check is the only extra work) and off (0: every request reads the key's row).
 *
 *   npx tsx bench/scoped-keys.ts          (SETS=200 BATCH=100 ROUNDS=4 SECONDS=3 CONNECTIONS=10)
 */
import { drive, interleaved, median, percent, registerAgent, roundRatios, startSvc, type Measured } from './harness';

const SETS = Number(process.env.SETS ?? 200);
const BATCH = Number(process.env.BATCH ?? 100);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const SECONDS = Number(process.env.SECONDS ?? 3);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 10);
const PATH = '/v1/memory/bench.key';

async function measure(cacheMs: string): Promise<{ cpu: number; control: number; rps: number }> {
  const svc = await startSvc({ SVC_MEMORY_RATE_PER_MINUTE: '0', SVC_EMBEDDINGS: 'none', SVC_AUTH_CACHE_MS: cacheMs });
  try {
    const agent = await registerAgent(svc.url, `bench-scoped-${cacheMs}`);
    const root = { authorization: `Bearer ${agent.apiKey}`, 'content-type': 'application/json' };
    const put = await fetch(`${svc.url}${PATH}`, { method: 'PUT', headers: root, body: JSON.stringify({ value: { note: 'a stored value', n: 1 } }) });
    if (!put.ok) throw new Error(`memory PUT: ${put.status} ${await put.text()}`);
    const made = await fetch(`${svc.url}/v1/me/keys`, { method: 'POST', headers: root, body: JSON.stringify({ scopes: ['svc:memory'], label: 'bench' }) });
    if (made.status !== 201) throw new Error(`scoped key: ${made.status} ${await made.text()}`);
    const scopedKey = ((await made.json()) as { api_key: string }).api_key;
    const keys = { root: agent.apiKey, scoped: scopedKey };

    // ---- 1. CPU per request, in process ----
    const app = svc.svc.app;
    async function batch(key: string): Promise<number> {
      const headers = { authorization: `Bearer ${key}` };
      const c0 = process.cpuUsage();
      for (let i = 0; i < BATCH; i++) {
        const r = await app.inject({ method: 'GET', url: PATH, headers });
        if (r.statusCode !== 200) throw new Error(`GET ${PATH}: ${r.statusCode} ${r.body}`);
      }
      const c = process.cpuUsage(c0);
      return (c.user + c.system) / BATCH;
    }
    for (let i = 0; i < 3; i++) { await batch(keys.root); await batch(keys.scoped); } // warm up
    const subjects = ['root', 'scoped', 'control'] as const;
    const cpu: Record<(typeof subjects)[number], number[]> = { root: [], scoped: [], control: [] };
    for (let n = 0; n < SETS; n++) {
      for (let k = 0; k < subjects.length; k++) {
        const who = subjects[(n + k) % subjects.length];
        cpu[who].push(await batch(who === 'scoped' ? keys.scoped : keys.root));
      }
    }
    const ratios = cpu.scoped.map((x, n) => x / cpu.root[n]);
    const control = cpu.control.map((x, n) => x / cpu.root[n]);
    const cpuRatio = median(ratios);
    console.log(`token cache ${cacheMs} ms, CPU per request (${SETS} sets of ${BATCH}): root median ${median(cpu.root).toFixed(1)} µs, scoped median ${median(cpu.scoped).toFixed(1)} µs, root again ${median(cpu.control).toFixed(1)} µs`);
    console.log(`token cache ${cacheMs} ms: CPU median set ratio ${percent(cpuRatio)} (a scoped request costs ${percent(cpuRatio - 1)} more CPU); ` +
      `control root ÷ root ${percent(median(control))} (the noise floor) → target ≤ 105 %`);

    // ---- 2. req/s over HTTP ----
    const run = (name: string, key: string) => () => drive(name, { url: `${svc.url}${PATH}`, headers: { authorization: `Bearer ${key}` }, connections: CONNECTIONS, duration: SECONDS });
    await drive('warmup', { url: `${svc.url}${PATH}`, headers: { authorization: `Bearer ${keys.scoped}` }, connections: CONNECTIONS, duration: 1 });
    const rounds: Measured[][] = await interleaved([run('root key', keys.root), run('scoped key (svc:memory)', keys.scoped)], ROUNDS);
    for (const r of rounds) for (const m of r) if (m.non2xx > 0 || m.errors > 0) throw new Error(`${m.name}: ${m.non2xx} non-2xx, ${m.errors} errors`);
    const rps = roundRatios(rounds, 1, 0);
    console.log(`token cache ${cacheMs} ms, req/s over HTTP: root ${rounds.map((r) => r[0].requestsPerSecond).join('/')}, scoped ${rounds.map((r) => r[1].requestsPerSecond).join('/')}; ` +
      `median round ratio ${percent(rps.median)} (rounds ${rps.ratios.map(percent).join(', ')})`);
    return { cpu: cpuRatio, control: median(control), rps: rps.median };
  } finally {
    await svc.close();
  }
}

const cached = await measure('2000');
const uncached = await measure('0');
console.log(`summary: scoped ÷ root CPU per request: cache on ${percent(cached.cpu)} (control ${percent(cached.control)}), cache off ${percent(uncached.cpu)} (control ${percent(uncached.control)}); ` +
  `req/s: cache on ${percent(cached.rps)}, cache off ${percent(uncached.rps)}`);
