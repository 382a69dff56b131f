#!/usr/bin/env node
// `npm test`: runs the vitest projects one after another — unit, sqlite, postgres — each running
// its files in parallel (vitest.config.ts). The postgres project runs once: on the PostgreSQL
// server named by SVC_CI_PG_URL when it is set (CI), else on PGlite (in-process, nothing to
// install). Prints a table of the projects' durations and ends with the plain summary line
// `N passed, N failed, N skipped`; the same figures go to .test-results/summary.json.
// Extra arguments go to every vitest run. `--no-summary` (CI, which prints the table and the
// closing line itself after its other steps) leaves the table and the line out.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

const args = process.argv.slice(2);
const summary = !args.includes('--no-summary');
const extra = args.filter((a) => a !== '--no-summary');
const outDir = '.test-results';
mkdirSync(outDir, { recursive: true });

// Response schema mismatches of this run (src/http/response-validation.ts append them).
const mismatches = `${outDir}/response-schema-mismatches.ndjson`;
rmSync(mismatches, { force: true });
rmSync(`${outDir}/response-statuses-undeclared.ndjson`, { force: true });

const pgServer = process.env.SVC_CI_PG_URL;
const projects = [
  { name: 'unit', engine: '-', env: {} },
  { name: 'sqlite', engine: 'SQLite', env: {} },
  pgServer
    ? { name: 'postgres', engine: 'PostgreSQL server', env: { SVC_TEST_PG: pgServer } }
    // PGlite is PostgreSQL compiled to WebAssembly, running inside each test file's worker: its work
    // is CPU, so no more files at once than cores (nor than the default 3; SVC_TEST_WORKERS overrides).
    : { name: 'postgres', engine: 'PGlite', env: {}, args: process.env.SVC_TEST_WORKERS ? [] : [`--maxWorkers=${Math.min(3, availableParallelism())}`] },
];

// Each failed test (or file that failed outside a test) as one line: file, name, the error's first line.
function failuresOf(j) {
  const cwd = `${process.cwd()}/`;
  const lines = [];
  for (const f of j.testResults) {
    const file = f.name.startsWith(cwd) ? f.name.slice(cwd.length) : f.name;
    const failed = f.assertionResults.filter((a) => a.status === 'failed');
    for (const a of failed) lines.push(`${file} > ${a.fullName}: ${firstLine(a.failureMessages?.[0])}`);
    if (failed.length === 0 && f.status === 'failed') lines.push(`${file}: ${firstLine(f.message)}`);
  }
  return lines;
}
function firstLine(text) {
  return String(text ?? '').split('\n').find((l) => l.trim() !== '')?.trim().slice(0, 300) ?? '';
}

function run(p) {
  const out = `${outDir}/${p.name}.json`;
  rmSync(out, { force: true });
  process.stdout.write(`\n=== ${p.name} (${p.engine}) ===\n`);
  const started = Date.now();
  const r = spawnSync('npx', ['vitest', 'run', '--project', p.name, '--reporter=default', '--reporter=json', `--outputFile=${out}`, ...(p.args ?? []), ...extra], {
    stdio: 'inherit',
    env: { ...process.env, ...p.env },
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  try {
    const j = JSON.parse(readFileSync(out, 'utf8'));
    return {
      project: p.name, engine: p.engine, seconds, files: j.testResults.length, failures: failuresOf(j),
      passed: j.numPassedTests,
      failed: j.numFailedTests + (j.success === false && j.numFailedTests === 0 ? 1 : 0),
      skipped: j.numPendingTests + j.numTodoTests,
    };
  } catch {
    // vitest died before writing results: count the run as one failure.
    return { project: p.name, engine: p.engine, seconds, files: 0, passed: 0, failed: 1, skipped: 0, exit: r.status, failures: [`vitest exited with ${r.status} before writing results`] };
  }
}

const results = projects.map(run);
const sum = results.reduce((a, t) => ({ passed: a.passed + t.passed, failed: a.failed + t.failed, skipped: a.skipped + t.skipped }), { passed: 0, failed: 0, skipped: 0 });
writeFileSync(`${outDir}/summary.json`, `${JSON.stringify({ ...sum, projects: results }, null, 2)}\n`);

if (summary) {
  printFailures(results);
  const pad = (v, n) => String(v).padEnd(n);
  const lpad = (v, n) => String(v).padStart(n);
  process.stdout.write(`\n${pad('project', 10)}${pad('engine', 20)}${lpad('files', 6)}${lpad('passed', 8)}${lpad('failed', 8)}${lpad('skipped', 9)}${lpad('seconds', 9)}\n`);
  for (const r of results) {
    process.stdout.write(`${pad(r.project, 10)}${pad(r.engine, 20)}${lpad(r.files, 6)}${lpad(r.passed, 8)}${lpad(r.failed, 8)}${lpad(r.skipped, 9)}${lpad(r.seconds, 9)}\n`);
  }
  process.stdout.write(`\n${sum.passed} passed, ${sum.failed} failed, ${sum.skipped} skipped\n`);
}
// The failed tests, by project: the last lines of a long log name what failed.
function printFailures(rs) {
  for (const r of rs) {
    if (!r.failures?.length) continue;
    process.stdout.write(`\nfailed in ${r.project} (${r.engine}):\n`);
    for (const line of r.failures) process.stdout.write(`  ${line}\n`);
  }
}

if (existsSync(mismatches)) {
  const n = readFileSync(mismatches, 'utf8').trim().split('\n').length;
  process.stdout.write(`${n} response schema mismatch(es): see ${mismatches}\n`);
}
process.exit(sum.failed > 0 ? 1 : 0);
