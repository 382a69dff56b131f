/**
 * Static browse of a local page: svc's POST /v1/browse (auth, URL policy, robots.txt from cache,
 * metering charge, guarded fetch, extraction in the worker thread, browse log insert, `_svc`) against
 * a direct fetch of the same page plus the same extraction (a second extraction thread), in the
 * same run, alternating the paths so load on the machine hits each alike. Target: svc ≤ 1.2×.
 * Pages: three of the extraction corpus (news article, wiki article, forum thread, 3–5 KiB each);
 * with PAGES=medium one ~34 KiB article and with PAGES=large one ~154 KiB article (the wiki page's
 * paragraphs repeated, with its navigation and sidebars), closer to the size of real article pages.
 * PAGES=sweep measures one size after another in the same run and prints one line per size: the
 * small pages, the wiki page grown by article text (8–150 KiB) and grown by page furniture, an
 * inline state script and a navigation menu (16–150 KiB, text unchanged), which is what most of a
 * real page's bytes are. Served on loopback. Every call in the bench uses the same HTTP client
 * (undici's fetch, the npm package svc depends on; CLIENT=request switches them all to
 * undici.request). Node's global fetch (its bundled, older undici) would cost ~0.15 ms more per
 * call than the direct path's client, so it is not used for calls to svc.
 *
 * A ceiling, also in the same rounds: a bare Fastify route in this process that does only the
 * direct path's work (undici fetch of the page, the same extraction) and answers the text as JSON,
 * called with the same client: what one HTTP hop to any server that browses costs, with none of
 * svc's work (auth, URL policy, robots.txt, metering, log). If that alone is over the target, no
 * change inside svc can meet it.
 *
 * svc's own time, also in the same rounds: from the moment svc's HTTP server hands it the request to
 * the last byte of its answer written (a `request` listener and the response's `finish`; no change
 * to svc), i.e. svc's time without the client's side of the HTTP exchange; the relay's likewise.
 *
 * CPU per call, also in the same rounds: the main thread's (Linux: /proc/self/task/<pid>/schedstat,
 * nanoseconds; svc, the relay, the direct path's fetch and every client side share that thread) and
 * the whole process's (process.cpuUsage: extraction threads, V8's helper threads, the WAL flush in libuv's pool).
 * Unlike wall time it does not grow when other work on the machine holds the cores, so svc's main
 * thread minus the relay's is svc's own work on the event loop however loaded the machine is. (The
 * all-threads figure is rougher: svc's WAL flush and V8's collector may finish during the next call.)
 *
 * Steady state, not a cold start: WARM rounds (default 300) of both paths run before the ROUNDS
 * (default 200) that are timed. With only a few warm-up calls the timed rounds measured V8 still
 * compiling svc's longer path and SQLite's WAL file still growing (a commit that extends the file
 * makes fdatasync write its size too): 1.68–1.77× with 3 warm-up calls against 1.3× with 300, the
 * same code. A running svc is in the steady state: the WAL file
 * keeps its size after a checkpoint and later commits overwrite it.
 */
import Fastify from 'fastify';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fetch as undiciFetch, request as undiciRequest } from 'undici';
import { systemClock } from '../src/lib/clock';
import { createExtractor } from '../src/infra/web/extractor';
import { createCredits } from '../src/modules/billing/credits';
import { createBillingStore } from '../src/modules/billing/store';
import { loadCorpus } from '../test/fixtures/pages/corpus';
import { html, startWebServer, text } from '../test/fakes/web-server';
import { registerAgent, startSvc } from './harness';

const ROUNDS = Number(process.env.ROUNDS ?? 200);
/**
 * The HTTP client of every call in the bench (the direct path's page fetch, the relay's, and the calls
 * to svc and the relay): `fetch` (default, undici's WHATWG fetch) or `request` (undici.request, the lean client svc itself fetches pages with).
 */
const CLIENT = process.env.CLIENT === 'request' ? 'request' : 'fetch';
async function call(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  if (CLIENT === 'request') {
    const res = await undiciRequest(url, { method: (init.method ?? 'GET') as 'GET', headers: init.headers, body: init.body });
    return { status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), body: Buffer.from(await res.body.arrayBuffer()) };
  }
  const res = await undiciFetch(url, init);
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', body: Buffer.from(await res.arrayBuffer()) };
}
const WARM = Number(process.env.WARM ?? 300);
/** PAGES=sweep: warm-up rounds at each size after the first (the JIT and the WAL are warm by then). */
const SWEEP_WARM = Number(process.env.SWEEP_WARM ?? 30);
const corpus = loadCorpus();
/** The wiki page with its paragraphs repeated until about `kib` KiB more article text. */
function grownPage(kib: number, file: string) {
  const wiki = corpus.find((p) => p.file === 'wiki-article.html')!;
  const src = wiki.body.toString('utf8');
  const paras = src.match(/<p>[\s\S]*?<\/p>/g) ?? [];
  let extra = '';
  for (let i = 0; extra.length < kib * 1024; i++) extra += paras[i % paras.length].replace('<p>', `<p data-n="${i}">`);
  const last = src.lastIndexOf('</p>') + 4;
  return { ...wiki, file, body: Buffer.from(src.slice(0, last) + extra + src.slice(last)) };
}
/**
 * The wiki page with about `kib` KiB more page furniture and no more article text: an inline
 * script with the page's state in <head> and a navigation menu of links, the markup real article
 * pages carry around their text. Extraction costs grow with it while the text svc stores and
 * answers stays ~3 KiB.
 */
function furnishedPage(kib: number, file: string) {
  const wiki = corpus.find((p) => p.file === 'wiki-article.html')!;
  const src = wiki.body.toString('utf8');
  const half = (kib * 1024) / 2;
  let state = '';
  for (let i = 0; state.length < half; i++) state += `${i ? ',' : ''}{"id":${i},"slug":"story-${i}","section":"s${i % 12}","tags":["t${i % 7}","t${i % 5}"]}`;
  let menu = '';
  for (let i = 0; menu.length < half; i++) {
    menu += `<li class="menu-item"><a href="/section/${i}">Section ${i}</a><ul class="sub-menu"><li><a href="/section/${i}/news">News</a></li><li><a href="/section/${i}/archive">Archive</a></li></ul></li>`;
  }
  const body = src
    .replace('</head>', `<script>window.__STATE__={"stories":[${state}]};</script></head>`)
    .replace(/<body[^>]*>/, (tag) => `${tag}<nav class="mega-menu"><ul>${menu}</ul></nav>`);
  return { ...wiki, file, body: Buffer.from(body) };
}
const small = corpus.filter((p) => ['news-article.html', 'wiki-article.html', 'forum-thread.html'].includes(p.file));
/**
 * PAGES=sweep: the page sizes measured one after another in this run: the three small pages, then
 * the wiki page grown by article text (every added byte is text svc stores and answers: the worst
 * case for svc) and grown by page furniture (closer to real pages, whose bytes are mostly markup).
 */
const SWEEP: { kind: 'text' | 'markup'; kib: number }[] = [
  { kind: 'text', kib: 0 },
  ...[8, 16, 32, 64, 150].map((kib) => ({ kind: 'text' as const, kib })),
  ...[16, 32, 64, 150].map((kib) => ({ kind: 'markup' as const, kib })),
];
const groupOf = ({ kind, kib }: { kind: 'text' | 'markup'; kib: number }) => (kib === 0
  ? small
  : [kind === 'text' ? grownPage(kib, `grown-${kib}.html`) : furnishedPage(kib, `furnished-${kib}.html`)]);
const sweep = process.env.PAGES === 'sweep';
const groups = sweep
  ? SWEEP.map((g) => ({ label: g.kib === 0 ? 'small' : `+${g.kind}`, pages: groupOf(g) }))
  : [{ label: '', pages: process.env.PAGES === 'large' ? groupOf({ kind: 'text', kib: 150 }) : process.env.PAGES === 'medium' ? groupOf({ kind: 'text', kib: 30 }) : small }];
const site = await startWebServer({ routes: { '/robots.txt': text('User-agent: *\nAllow: /\n') } });
for (const p of groups.flatMap((g) => g.pages)) site.route(`/${p.file}`, html(p.body.toString('utf8')));
const svc = await startSvc({ SVC_OUTBOUND_ALLOW_LOOPBACK: 'true', SVC_EMBEDDINGS: 'none', SVC_CHROMIUM_PATH: 'none' });
const extractor = createExtractor();
// The relay (ceiling): a route that fetches and extracts like the direct path, with its own
// extraction thread as svc has its own.
const relayExtractor = createExtractor();
const relay = Fastify({ logger: false });
relay.post('/relay', async (request) => {
  const { url } = request.body as { url: string };
  const res = await call(url);
  const page = await relayExtractor.extract({ body: res.body, contentType: res.contentType, url });
  return { status: 'success', url, http_status: res.status, title: page.title, text: page.text };
});
const relayUrl = `${await relay.listen({ host: '127.0.0.1', port: 0 })}/relay`;
const svcServerMs = serverTimes(svc.svc.app.server, '/v1/browse');
const relayServerMs = serverTimes(relay.server, '/relay');

/**
 * svc's own time for each request to `path` on `server`: from the moment the HTTP server hands svc the
 * request (its headers parsed) to the moment the last byte of the answer is handed to the socket. What
 * it leaves out is the client's side of the extra HTTP hop (building the request, reading and parsing
 * the answer) and loopback transit. Sequential calls, so the last value is the call just made.
 */
function serverTimes(server: Server, path: string): number[] {
  const xs: number[] = [];
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.url !== path) return;
    const s = performance.now();
    res.once('finish', () => xs.push(performance.now() - s));
  });
  return xs;
}
/** The main thread's CPU time so far (ms); NaN where /proc has no schedstat (not Linux). */
const schedstatPath = `/proc/${process.pid}/task/${process.pid}/schedstat`;
const schedstat = existsSync(schedstatPath);
/** [main thread, all threads] CPU ms so far. */
function cpuNow(): [number, number] {
  const all = process.cpuUsage();
  const main = schedstat ? Number(readFileSync(schedstatPath, 'utf8').split(' ')[0]) / 1e6 : Number.NaN;
  return [main, (all.user + all.system) / 1000];
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
try {
  const { apiKey, agentId } = await registerAgent(svc.url);
  await createCredits({ store: createBillingStore(svc.svc.database), clock: systemClock })
    .add(agentId, { kind: 'grant', units: 1_000_000_000, ref: 'bench-grant' });
  const viaSvc = async (url: string) => {
    const res = await call(`${svc.url}/v1/browse`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ url }) });
    const body = JSON.parse(res.body.toString('utf8')) as { text?: string; error_code?: string };
    if (res.status !== 200 || !body.text) throw new Error(`svc browse failed: ${res.status} ${body.error_code}`);
    return body.text.length;
  };
  const viaRelay = async (url: string) => {
    const res = await call(relayUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url }) });
    const body = JSON.parse(res.body.toString('utf8')) as { text?: string };
    if (res.status !== 200 || !body.text) throw new Error(`relay failed: ${res.status}`);
    return body.text.length;
  };
  const direct = async (url: string) => {
    const res = await call(url);
    const page = await extractor.extract({ body: res.body, contentType: res.contentType, url });
    return page.text.length;
  };
  // Rounds rotate the order of the paths (each page in every order in turn), so load on the machine hits each alike.
  const paths = { svc: viaSvc, direct, relay: viaRelay };
  type Path = keyof typeof paths;
  const orders: Path[][] = [['svc', 'direct', 'relay'], ['direct', 'relay', 'svc'], ['relay', 'svc', 'direct']];
  const rounds = async (pages: typeof small, n: number) => {
    const t: Record<Path, number[]> = { svc: [], direct: [], relay: [] };
    const cpu: Record<Path, { main: number; all: number }> = { svc: { main: 0, all: 0 }, direct: { main: 0, all: 0 }, relay: { main: 0, all: 0 } };
    for (let i = 0; i < n; i++) {
      const url = `${site.url}/${pages[i % pages.length].file}`;
      for (const which of orders[Math.floor(i / pages.length) % orders.length]) {
        const c0 = cpuNow();
        const s = performance.now();
        await paths[which](url);
        t[which].push(performance.now() - s);
        const c1 = cpuNow();
        cpu[which].main += c1[0] - c0[0];
        cpu[which].all += c1[1] - c0[1];
      }
    }
    return { ...t, cpu };
  };
  // Warm-up, the same for both paths: both extraction threads, svc's robots cache, the JIT, and
  // SQLite's WAL file grown to its working size (at least one checkpoint: ~1,000 pages).
  const walPath = `${svc.svc.database.sqlite!.name}-wal`;
  await rounds(groups[0].pages, WARM);
  const walBytes = statSync(walPath).size;
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const kib = (pages: typeof small) => pages.map((p) => `${(p.body.length / 1024).toFixed(0)}`).join('/');
  if (sweep) {
    console.log(`static browse by page size, client ${CLIENT}, ${ROUNDS} rounds per size after ${WARM} warm-up rounds (and ${SWEEP_WARM} more at each new size)`);
    console.log('  page           KiB | direct ms | svc ms | svc ÷ direct | paired | relay ÷ direct | svc ÷ relay');
  }
  for (const [g, { label, pages }] of groups.entries()) {
    if (g > 0) await rounds(pages, SWEEP_WARM);
    svcServerMs.length = 0;
    relayServerMs.length = 0;
    const t = await rounds(pages, ROUNDS);
    if (svcServerMs.length !== ROUNDS || relayServerMs.length !== ROUNDS) throw new Error('server-side timings missing');
    const ms = { svc: median(t.svc), direct: median(t.direct), relay: median(t.relay) };
    // Each round's svc call over its direct call, made within milliseconds of each other: the
    // machine's drift over the run (a small VM's speed wanders by more than the effect) cancels.
    const paired = median(t.svc.map((x, i) => x / t.direct[i]));
    if (sweep) {
      console.log(`  ${label.padEnd(7)} ${kib(pages).padStart(11)} | ${ms.direct.toFixed(1).padStart(9)} | ${ms.svc.toFixed(1).padStart(6)} | ${`${(ms.svc / ms.direct).toFixed(2)}x`.padStart(12)} | ${`${paired.toFixed(2)}x`.padStart(6)} | ${`${(ms.relay / ms.direct).toFixed(2)}x`.padStart(14)} | ${(ms.svc / ms.relay).toFixed(2)}x`);
      continue;
    }
    const server = { svc: median(svcServerMs), relay: median(relayServerMs) };
    console.log(`static browse, client ${CLIENT}, ${ROUNDS} rounds after ${WARM} warm-up rounds (WAL file ${(walBytes / 1024).toFixed(0)} KiB) over ${pages.length} pages (${pages.map((p) => `${p.file} ${(p.body.length / 1024).toFixed(0)} KiB`).join(', ')})`);
    console.log(`  direct fetch + extraction: median ${ms.direct.toFixed(1)} ms, mean ${(sum(t.direct) / ROUNDS).toFixed(1)} ms`);
    console.log(`  svc POST /v1/browse:       median ${ms.svc.toFixed(1)} ms, mean ${(sum(t.svc) / ROUNDS).toFixed(1)} ms`);
    console.log(`  ratio (median) ${(ms.svc / ms.direct).toFixed(2)}x, ratio (mean) ${(sum(t.svc) / sum(t.direct)).toFixed(2)}x, median of each round's ratio ${paired.toFixed(2)}x`);
    console.log(`  svc's own time (request handed to svc → last byte of the answer written; no client side of the hop): median ${server.svc.toFixed(1)} ms, ratio ${(server.svc / ms.direct).toFixed(2)}x (the relay's own ${server.relay.toFixed(1)} ms, ${(server.relay / ms.direct).toFixed(2)}x)`);
    console.log(`  ceiling: bare relay route (fetch + extraction behind one HTTP hop): median ${ms.relay.toFixed(1)} ms, ratio ${(ms.relay / ms.direct).toFixed(2)}x; svc ÷ relay ${(ms.svc / ms.relay).toFixed(2)}x`);
    const per = (p: Path, k: 'main' | 'all') => t.cpu[p][k] / ROUNDS;
    if (schedstat) console.log(`  CPU per call, main thread: direct ${per('direct', 'main').toFixed(2)} ms, relay ${per('relay', 'main').toFixed(2)} ms, svc ${per('svc', 'main').toFixed(2)} ms (svc's own work: svc − relay ${(per('svc', 'main') - per('relay', 'main')).toFixed(2)} ms; one HTTP hop: relay − direct ${(per('relay', 'main') - per('direct', 'main')).toFixed(2)} ms)`);
    console.log(`  CPU per call, all threads: direct ${per('direct', 'all').toFixed(2)} ms, relay ${per('relay', 'all').toFixed(2)} ms, svc ${per('svc', 'all').toFixed(2)} ms`);
  }
} finally {
  await extractor.close();
  await relayExtractor.close();
  await relay.close();
  await svc.close();
  await site.close();
}
