/**
 * Document parsing throughput: pages/s for a generated N-page PDF and rows/s for a generated
 * XLSX, measured in the same run so the figures are ratios against a baseline:
 *   library    pdfjs / exceljs called directly in this process, text only (the baseline)
 *   engine     extractDocument in this process: our extractors, ZIP guard, limits, chunking
 *   svc path   createDocumentParser().parseToJson, what the parse service calls: a warm child
 *              process, the result serialized there (target: within 1.2x the library's time)
 *   process    createDocumentParser().parse, warm (the result as a structured clone)
 *   thread     the same with isolation 'thread', warm
 *   cold       the first parse of a new pool (process start, tsx, libraries, cold JIT)
 *   after idle the first parse after the pool sat idle past idleMs, with the default warm runner
 *              kept (target: at most 1.5x a warm parse) and without it (keepWarm: 0, as before)
 * Figures are recorded in docs/parsing.md and bench/README.md.
 * Run: npx tsx bench/parse.ts [--pages 200] [--rows 50000] [--repeat 5]
 */
import { rmSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { createDocumentParser, resolveParseLimits, type DocumentParser } from '../src/infra/parsers/index';
import { extractDocument } from '../src/infra/parsers/extract';
import { generateDocuments, libraryPdf, libraryXlsx, median, sizes, timed as time } from './parse-fixtures';

const { pages, rows, repeat } = sizes;

const PDF = 'application/pdf';
const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
// Generous limits so the whole document is parsed in every variant (no truncation).
const limits = resolveParseLimits({ maxTextChars: 50_000_000, maxRows: 10_000_000, maxCells: 100_000_000, maxSourceRows: 10_000_000, timeoutMs: 600_000, maxMemoryMb: 1024 });
const idleMs = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(pdfPath: string, xlsxPath: string) {
  const docs = [
    { kind: 'pdf' as const, path: pdfPath, type: PDF, units: pages, unit: 'pages', library: () => libraryPdf(pdfPath) },
    { kind: 'xlsx' as const, path: xlsxPath, type: XLSX, units: rows + 1, unit: 'rows', library: () => libraryXlsx(xlsxPath) },
  ];
  const lines: string[] = [];
  for (const d of docs) {
    const size = statSync(d.path).size;
    const job = { path: d.path, kind: d.kind, contentType: d.type, sizeBytes: size, limits };
    const pool = createDocumentParser({ concurrency: 1, idleMs });
    const unkept = createDocumentParser({ concurrency: 1, idleMs, keepWarm: 0 });
    const threads = createDocumentParser({ concurrency: 1, isolation: 'thread' });
    const parse = (p: DocumentParser) => () => p.parse({ path: d.path }, d.type, limits);
    const json = (p: DocumentParser) => () => p.parseToJson({ path: d.path }, d.type, limits);
    const cold = await time(json(pool));
    const first = await pool.parse({ path: d.path }, d.type, limits);
    // Warm-up (module load, JIT) of the in-process variants and the other pools, not timed.
    await d.library();
    await extractDocument(job);
    await threads.parse({ path: d.path }, d.type, limits);
    await unkept.parseToJson({ path: d.path }, d.type, limits);
    // Rounds interleave the variants so a load spike on a shared machine hits all of them alike.
    const runs = { library: [] as number[], engine: [] as number[], svc: [] as number[], warm: [] as number[], thread: [] as number[] };
    for (let i = 0; i < repeat; i++) {
      runs.library.push(await time(d.library));
      runs.engine.push(await time(() => extractDocument(job)));
      runs.svc.push(await time(json(pool)));
      runs.warm.push(await time(parse(pool)));
      runs.thread.push(await time(parse(threads)));
    }
    // After an idle spell longer than idleMs: the kept runner, and a pool that keeps none.
    const idle = { kept: [] as number[], unkept: [] as number[] };
    for (let i = 0; i < Math.min(3, repeat); i++) {
      await sleep(idleMs * 2.5);
      idle.kept.push(await time(json(pool)));
      idle.unkept.push(await time(json(unkept)));
    }
    await Promise.all([pool.close(), unkept.close(), threads.close()]);
    const [library, engine, svc, warm, thread] = [runs.library, runs.engine, runs.svc, runs.warm, runs.thread].map(median) as [number, number, number, number, number];
    const [afterIdle, afterIdleUnkept] = [idle.kept, idle.unkept].map(median) as [number, number];
    if (first.metadata.truncated) throw new Error('benchmark document was truncated; raise the limits');

    const rate = (ms: number) => Math.round((d.units / ms) * 1000);
    const row = (label: string, ms: number, extra = '') => `  ${label.padEnd(40)} ${ms.toFixed(0).padStart(7)} ms  ${String(rate(ms)).padStart(8)} ${d.unit}/s  ${(library / ms).toFixed(2)}  ${(ms / library).toFixed(2)}x${extra}`;
    lines.push(
      `${d.kind.toUpperCase()}: ${d.units} ${d.unit}, ${(size / 1024 / 1024).toFixed(1)} MiB, ${first.text.length} chars, ${first.chunks.length} chunks`,
      `  ${'variant'.padEnd(40)} ${'median'.padStart(10)}  ${'rate'.padStart(8 + d.unit.length + 3)}  speed  time`,
      row('library (in-process, baseline)', library),
      row('engine (in-process)', engine),
      row('svc path: parseToJson, process, warm', svc, '   (target <= 1.2x)'),
      row('parse, process, warm', warm),
      row('parse, thread, warm', thread),
      row('cold (first parse of a new pool)', cold, `   ${(cold / svc).toFixed(2)}x warm`),
      row('after idle, warm runner kept (default)', afterIdle, `   ${(afterIdle / svc).toFixed(2)}x warm (target <= 1.5x)`),
      row('after idle, none kept (keepWarm: 0)', afterIdleUnkept, `   ${(afterIdleUnkept / svc).toFixed(2)}x warm`),
    );
  }
  console.log(`\nmedian of ${repeat} interleaved rounds (after idle: median of ${Math.min(3, repeat)}, each after ${idleMs * 2.5} ms idle with idleMs ${idleMs}); speed = library time / variant time, time = variant time / library time`);
  console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log(lines.join('\n'));
}

const { dir, pdfPath, xlsxPath } = await generateDocuments('svc-bench-parse-');
try {
  await main(pdfPath, xlsxPath);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
