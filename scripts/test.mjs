#!/usr/bin/env node
// `npm test`: runs every vitest project (unit, SQLite, PostgreSQL on PGlite) and, when
// SVC_CI_PG_URL names a PostgreSQL server, the PostgreSQL project once more against that server.
// Ends with the plain summary line `N passed, N failed, N skipped`. Extra arguments go to vitest.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';

const extra = process.argv.slice(2);
const outDir = '.test-results';
mkdirSync(outDir, { recursive: true });

function run(label, args, env) {
  const out = `${outDir}/${label}.json`;
  rmSync(out, { force: true });
  process.stdout.write(`\n=== ${label} ===\n`);
  const r = spawnSync('npx', ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile=${out}`, ...args, ...extra], {
    stdio: 'inherit',
    env: { ...process.env, ...env },
  });
  try {
    const j = JSON.parse(readFileSync(out, 'utf8'));
    return {
      passed: j.numPassedTests,
      failed: j.numFailedTests + (j.success === false && j.numFailedTests === 0 ? 1 : 0),
      skipped: j.numPendingTests + j.numTodoTests,
    };
  } catch {
    // vitest died before writing results: count the run as one failure.
    return { passed: 0, failed: 1, skipped: 0, exit: r.status };
  }
}

const totals = [run('all-projects', [], {})];
if (process.env.SVC_CI_PG_URL) {
  totals.push(run('postgres-server', ['--project', 'postgres'], { SVC_TEST_PG: process.env.SVC_CI_PG_URL }));
}
const sum = totals.reduce((a, t) => ({ passed: a.passed + t.passed, failed: a.failed + t.failed, skipped: a.skipped + t.skipped }), { passed: 0, failed: 0, skipped: 0 });
process.stdout.write(`\n${sum.passed} passed, ${sum.failed} failed, ${sum.skipped} skipped\n`);
process.exit(sum.failed > 0 ? 1 : 0);
