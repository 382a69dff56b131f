/**
 * Document parsing throughput: pages/s for a generated N-page PDF and rows/s for a generated
 * XLSX, measured four ways in the same run so the figures are ratios against a baseline:
 *   library    pdfjs / exceljs called directly in this process, text only (the baseline)
 *   engine     extractDocument in this process: our extractors, ZIP guard, limits, chunking
 *   pool       createDocumentParser().parse (child-process isolation, the default), warm and cold
 *   thread     the same with isolation 'thread', warm
 * Figures are recorded in docs/parsing.md.
 * Run: npx tsx bench/parse.ts [--pages 200] [--rows 50000] [--repeat 5]
 */
import { rmSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { createDocumentParser, resolveParseLimits } from '../src/infra/parsers/index';
import { extractDocument } from '../src/infra/parsers/extract';
import { generateDocuments, libraryPdf, libraryXlsx, median, sizes, timed as time } from './parse-fixtures';

const { pages, rows, repeat } = sizes;

const PDF = 'application/pdf';
const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
// Generous limits so the whole document is parsed in every variant (no truncation).
const limits = resolveParseLimits({ maxTextChars: 50_000_000, maxRows: 10_000_000, maxCells: 100_000_000, maxSourceRows: 10_000_000, timeoutMs: 600_000, maxMemoryMb: 1024 });

async function main(pdfPath: string, xlsxPath: string) {
  const docs = [
    { kind: 'pdf' as const, path: pdfPath, type: PDF, units: pages, unit: 'pages', library: () => libraryPdf(pdfPath) },
    { kind: 'xlsx' as const, path: xlsxPath, type: XLSX, units: rows + 1, unit: 'rows', library: () => libraryXlsx(xlsxPath) },
  ];
  const lines: string[] = [];
  for (const d of docs) {
    const size = statSync(d.path).size;
    const job = { path: d.path, kind: d.kind, contentType: d.type, sizeBytes: size, limits };
    const pool = createDocumentParser({ concurrency: 1 });
    const threads = createDocumentParser({ concurrency: 1, isolation: 'thread' });
    const parse = (p: typeof pool) => () => p.parse({ path: d.path }, d.type, limits);
    const cold = await time(parse(pool));
    const first = await pool.parse({ path: d.path }, d.type, limits);
    // Warm-up (module load, JIT) of the in-process variants and the thread pool, not timed.
    await d.library();
    await extractDocument(job);
    await threads.parse({ path: d.path }, d.type, limits);
    // Rounds interleave the variants so a load spike on a shared machine hits all of them alike.
    const runs = { library: [] as number[], engine: [] as number[], warm: [] as number[], thread: [] as number[] };
    for (let i = 0; i < repeat; i++) {
      runs.library.push(await time(d.library));
      runs.engine.push(await time(() => extractDocument(job)));
      runs.warm.push(await time(parse(pool)));
      runs.thread.push(await time(parse(threads)));
    }
    await Promise.all([pool.close(), threads.close()]);
    const [library, engine, warm, thread] = [runs.library, runs.engine, runs.warm, runs.thread].map(median) as [number, number, number, number];
    if (first.metadata.truncated) throw new Error('benchmark document was truncated; raise the limits');

    const rate = (ms: number) => Math.round((d.units / ms) * 1000);
    const ratio = (ms: number) => (library / ms).toFixed(2);
    lines.push(
      `${d.kind.toUpperCase()}: ${d.units} ${d.unit}, ${(size / 1024 / 1024).toFixed(1)} MiB, ${first.text.length} chars, ${first.chunks.length} chunks`,
      `  library (in-process, baseline)  ${library.toFixed(0).padStart(7)} ms  ${String(rate(library)).padStart(8)} ${d.unit}/s  1.00`,
      `  engine  (in-process)            ${engine.toFixed(0).padStart(7)} ms  ${String(rate(engine)).padStart(8)} ${d.unit}/s  ${ratio(engine)}`,
      `  parseDocument, process, warm    ${warm.toFixed(0).padStart(7)} ms  ${String(rate(warm)).padStart(8)} ${d.unit}/s  ${ratio(warm)}`,
      `  parseDocument, process, cold    ${cold.toFixed(0).padStart(7)} ms  ${String(rate(cold)).padStart(8)} ${d.unit}/s  ${ratio(cold)}`,
      `  parseDocument, thread, warm     ${thread.toFixed(0).padStart(7)} ms  ${String(rate(thread)).padStart(8)} ${d.unit}/s  ${ratio(thread)}`,
    );
  }
  console.log(`\nmedian of ${repeat} interleaved rounds (cold: first parse of a new pool); ratio = library time / variant time (1.00 = as fast as the bare library)`);
  console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log(lines.join('\n'));
}

const { dir, pdfPath, xlsxPath } = await generateDocuments('svc-bench-parse-');
try {
  await main(pdfPath, xlsxPath);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
