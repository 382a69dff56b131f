/**
 * 100 MB blob upload and download through the service (PUT /v1/blobs raw body, GET /v1/blobs/{id},
 * real HTTP over loopback, svc on SQLite + the filesystem store, in this process) against a plain
 * file copy on the same disk in the same run: stream copy + fsync for the upload (the store fsyncs
 * too), stream copy for the download. Peak RSS of the process is sampled every 5 ms per operation.
 * Run: npx tsx bench/blob-transfer.ts [--mb 100] [--repeat 5]
 */
import { createReadStream, createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import { openDatabase } from '../src/infra/db/database';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const MB = arg('mb', 100);
const repeat = arg('repeat', 5);
const dir = mkdtempSync(join(tmpdir(), 'svc-bench-blob-'));
const src = join(dir, 'source.bin');
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;

async function measured(run: () => Promise<unknown>): Promise<{ ms: number; peakRssMb: number }> {
  if (global.gc) global.gc();
  const base = process.memoryUsage().rss;
  let peak = base;
  const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 5);
  const t = performance.now();
  await run();
  const ms = performance.now() - t;
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().rss);
  return { ms, peakRssMb: Math.round((peak - base) / 1048576) };
}

async function copyWithFsync(from: string, to: string) {
  const out = createWriteStream(to);
  await pipeline(createReadStream(from), out);
  const fh = await open(to, 'r+');
  await fh.sync();
  await fh.close();
}

function put(url: string, token: string, file: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/blobs`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream', 'content-length': MB * 1048576 } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    createReadStream(file).pipe(req);
  });
}

function get(url: string, token: string, id: string, to: string): Promise<number> {
  return new Promise((resolve, reject) => {
    request(`${url}/v1/blobs/${id}`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      pipeline(res, createWriteStream(to)).then(() => resolve(res.statusCode ?? 0), reject);
    }).on('error', reject).end();
  });
}

async function main() {
  const chunk = randomBytes(1048576);
  writeFileSync(src, '');
  const w = createWriteStream(src);
  for (let i = 0; i < MB; i++) w.write(chunk.map((b) => (b + i) & 255));
  await new Promise((r) => w.end(r));
  const config = loadConfig({ LOG_LEVEL: 'silent', PORT: '0', SVC_DATA_DIR: join(dir, 'data'), SVC_EMBEDDINGS: 'none', SVC_BLOB_MAX_BYTES: String(2 * MB * 1048576) });
  const { app } = await buildApp({ config, logger: false });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const reg = await app.inject({ method: 'POST', url: '/v1/register', payload: { agent_name: 'bench-blob', owner_identifier: 'bench', agree_to_terms: true } });
  const { api_key: token, agent_id: agentId } = JSON.parse(reg.body);
  // A tier whose blob cap holds several 100 MB blobs.
  const side = openDatabase({ dataDir: join(dir, 'data'), poolMax: 1 });
  await side.db.updateTable('agents').set({ tier: 'deploy' }).where('agent_id', '=', agentId).execute();
  await side.close();

  const rows: Record<string, { ms: number[]; rss: number[] }> = { 'copy+fsync': { ms: [], rss: [] }, upload: { ms: [], rss: [] }, 'read copy': { ms: [], rss: [] }, download: { ms: [], rss: [] } };
  const add = (k: string, r: { ms: number; peakRssMb: number }) => { rows[k]!.ms.push(r.ms); rows[k]!.rss.push(r.peakRssMb); };
  for (let i = 0; i < repeat; i++) {
    // Each round uploads different bytes (one byte changed) so the store really writes them.
    const fh = await open(src, 'r+');
    await fh.write(Buffer.from([i]), 0, 1, 0);
    await fh.close();
    add('copy+fsync', await measured(() => copyWithFsync(src, join(dir, `copy-${i}.bin`))));
    let id = '';
    add('upload', await measured(async () => {
      const status = await put(url, token, src);
      if (status !== 201) throw new Error(`upload ${status}`);
    }));
    const list = await app.inject({ method: 'GET', url: '/v1/blobs?per_page=1', headers: { authorization: `Bearer ${token}` } });
    id = JSON.parse(list.body).blobs[0].blob_id;
    add('read copy', await measured(() => pipeline(createReadStream(join(dir, `copy-${i}.bin`)), createWriteStream(join(dir, `read-${i}.bin`)))));
    add('download', await measured(async () => {
      const status = await get(url, token, id, join(dir, `down-${i}.bin`));
      if (status !== 200) throw new Error(`download ${status}`);
    }));
    for (const f of [`copy-${i}.bin`, `read-${i}.bin`, `down-${i}.bin`]) rmSync(join(dir, f), { force: true });
  }
  await app.close();
  const m = (k: string) => median(rows[k]!.ms);
  const r = (k: string) => Math.max(...rows[k]!.rss);
  console.log(`load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}; ${MB} MB, median of ${repeat}`);
  console.log('| operation | baseline ms | svc ms | svc ÷ baseline | peak RSS growth (svc) |');
  console.log('|---|---|---|---|---|');
  console.log(`| upload ${MB} MB (vs copy+fsync) | ${m('copy+fsync').toFixed(0)} | ${m('upload').toFixed(0)} | ${(m('upload') / m('copy+fsync')).toFixed(2)}× | ${r('upload')} MB |`);
  console.log(`| download ${MB} MB (vs stream copy) | ${m('read copy').toFixed(0)} | ${m('download').toFixed(0)} | ${(m('download') / m('read copy')).toFixed(2)}× | ${r('download')} MB |`);
  rmSync(dir, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
