/**
 * Parse throughput through the service against the parser library called directly, same run:
 * pages/s for a generated N-page PDF (pdfjs-dist) and rows/s for a generated XLSX (exceljs).
 *   library  pdfjs / exceljs in this process, text only (the baseline, as in bench/parse.ts)
 *   engine   createDocumentParser().parseToJson with default limits (isolated process; the result comes
 *            back as JSON text): what the service calls
 *   service  POST /v1/blobs/{id}/parse over loopback HTTP: auth, rate limit, parse quota, blob read,
 *            the isolated parser process, result assembly, chunks stored, JSON answer
 * svc runs in this process on SQLite and the filesystem store, embeddings off (indexing chunks is
 * background work, not part of a parse). Median of --repeat runs after one warm-up each.
 * Run: npx tsx bench/parse-service.ts [--pages 200] [--rows 50000] [--repeat 5]
 */
import { readFileSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import { openDatabase } from '../src/infra/db/database';
import { createDocumentParser } from '../src/infra/parsers';
import { keepBuiltins } from '../src/infra/parsers/builtins.mjs';
import { generateDocuments, libraryPdf, libraryXlsx, median, sizes, timed } from './parse-fixtures';

const { pages, rows, repeat } = sizes;

async function main() {
  // pdfjs' legacy build replaces the native Array.prototype.push with a core-js polyfill,
  // process-wide, when it is first loaded (src/infra/parsers/builtins.mjs). The parse runners undo
  // that; the baseline must too, or every library run after the first PDF one (XLSX too) and the
  // server in this process would pay for the slow push, which a production server never loads.
  await keepBuiltins(async () => {
    await import('pdfjs-dist/legacy/build/pdf.mjs');
    // @ts-expect-error pdfjs-dist ships no types for its worker bundle
    await import('pdfjs-dist/legacy/build/pdf.worker.mjs');
  });
  const nativePush = Array.prototype.push;
  const { dir, pdfPath, xlsxPath } = await generateDocuments('svc-bench-parse-svc-');
  const config = loadConfig({ LOG_LEVEL: 'silent', PORT: '0', SVC_DATA_DIR: join(dir, 'data'), SVC_EMBEDDINGS: 'none', SVC_PARSE_SYNC_MAX_BYTES: String(256 * 1048576), SVC_PARSE_CONCURRENCY: '1' });
  const { app } = await buildApp({ config, logger: false });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const reg = JSON.parse((await app.inject({ method: 'POST', url: '/v1/register', payload: { agent_name: 'bench-parse', owner_identifier: 'bench', agree_to_terms: true } })).body);
  const side = openDatabase({ dataDir: join(dir, 'data'), poolMax: 1 });
  await side.db.updateTable('agents').set({ tier: 'deploy' }).where('agent_id', '=', reg.agent_id).execute(); // 120 parses per minute
  await side.close();
  const auth = { authorization: `Bearer ${reg.api_key}` };
  const docs = [
    { name: 'PDF', path: pdfPath, type: 'application/pdf', units: pages, unit: 'pages', library: () => libraryPdf(pdfPath) },
    { name: 'XLSX', path: xlsxPath, type: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', units: rows + 1, unit: 'rows', library: () => libraryXlsx(xlsxPath) },
  ];
  const out: string[] = [];
  for (const d of docs) {
    const up = await fetch(`${url}/v1/blobs`, { method: 'PUT', headers: { ...auth, 'content-type': d.type }, body: readFileSync(d.path) });
    const id = ((await up.json()) as { blob_id: string }).blob_id;
    const service = async () => {
      const res = await fetch(`${url}/v1/blobs/${id}/parse`, { method: 'POST', headers: auth });
      const body = (await res.json()) as { status: string; error?: string };
      if (body.status !== 'complete') throw new Error(`parse ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
    };
    const parser = createDocumentParser({ concurrency: 1 });
    const pool = () => parser.parseToJson({ path: d.path }, d.type);
    await d.library();
    await service();
    await pool();
    const lib: number[] = [];
    const svc: number[] = [];
    const eng: number[] = [];
    for (let i = 0; i < repeat; i++) { // alternate, so drifting load hits all alike
      lib.push(await timed(d.library));
      svc.push(await timed(service));
      eng.push(await timed(pool));
    }
    await parser.close();
    const engRate = d.units / (median(eng) / 1000);
    const libRate = d.units / (median(lib) / 1000);
    const svcRate = d.units / (median(svc) / 1000);
    out.push(`| ${d.name} (${d.units} ${d.unit}) | ${Math.round(libRate)} ${d.unit}/s | ${Math.round(engRate)} ${d.unit}/s (${Math.round((engRate / libRate) * 100)} %) | ${Math.round(svcRate)} ${d.unit}/s | ${Math.round((svcRate / libRate) * 100)} % |`);
  }
  await app.close();
  if (Array.prototype.push !== nativePush) throw new Error('Array.prototype.push was replaced during the run');
  console.log(`load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}; median of ${repeat}`);
  console.log('| document | library directly | parser engine, default limits (÷ library) | through the service | service ÷ library |');
  console.log('|---|---|---|---|---|');
  for (const l of out) console.log(l);
  rmSync(dir, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
