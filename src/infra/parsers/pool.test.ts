/**
 * The pool must never hold a process open: a script that parses and closes the parser ends, and
 * so does one that forgets to close it (idle runners are unref'd). Run as real scripts, because
 * vitest itself keeps the event loop alive. (A bug here once left `await parser.close()` pending
 * forever: the killed child was unref'd, so nothing kept the loop alive to see it exit.)
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, expect, test } from 'vitest';
import { parserEnvironment } from './runners';

const dir = mkdtempSync(join(tmpdir(), 'svc-pool-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm')).href;
const index = new URL('./index.ts', import.meta.url).href;

function script(name: string, close: boolean, isolation: 'process' | 'thread'): string {
  const csv = join(dir, `${name}.csv`);
  writeFileSync(csv, 'a,b\n1,2\n');
  const path = join(dir, `${name}.mts`);
  writeFileSync(path, [
    `import { createDocumentParser } from ${JSON.stringify(index)};`,
    `const parser = createDocumentParser({ isolation: '${isolation}', idleMs: 60_000 });`,
    `const r = await parser.parse({ path: ${JSON.stringify(csv)} }, 'text/csv');`,
    close ? 'await parser.close();' : '',
    `console.log('rows', r.rows.length);`,
  ].join('\n'));
  return path;
}

function run(path: string): Promise<{ code: number | null; stdout: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', tsx, path], { timeout: 25_000 }, (error, stdout) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, ms: performance.now() - started });
    });
  });
}

test('a script ends after parser.close(), and also without it (idle runners do not hold the loop)', async () => {
  const results = await Promise.all([
    run(script('closes', true, 'process')),
    run(script('forgets', false, 'process')),
    run(script('closes-thread', true, 'thread')),
  ]);
  for (const r of results) {
    expect(r.stdout).toBe('rows 1\n');
    expect(r.code).toBe(0);
    expect(r.ms).toBeLessThan(25_000); // well before the 60 s idle timer
  }
});

test('a parser process gets none of the server environment beyond what Node needs', () => {
  process.env.SVC_TEST_SECRET_FOR_PARSER = 'database-password';
  try {
    const env = parserEnvironment();
    expect(env.SVC_TEST_SECRET_FOR_PARSER).toBeUndefined();
    expect(env.NODE_OPTIONS).toBeUndefined();
    expect(env.PATH).toBe(process.env.PATH);
  } finally {
    delete process.env.SVC_TEST_SECRET_FOR_PARSER;
  }
});

test('owners take turns: an agent\'s parse waits for one runner to finish, not for the backlog another agent queued first', async () => {
  const { createDocumentParser } = await import('./index');
  const parser = createDocumentParser({ concurrency: 1, isolation: 'thread' });
  try {
    const file = (name: string) => {
      const path = join(dir, `${name}.csv`);
      writeFileSync(path, `k,v\n${Array.from({ length: 2000 }, (_, i) => `${name}${i},${i}`).join('\n')}\n`);
      return path;
    };
    const done: string[] = [];
    const parse = (owner: string, name: string) => parser.parse({ path: file(name), owner }, 'text/csv').then(() => done.push(name));
    const backlog = ['a1', 'a2', 'a3', 'a4'].map((n) => parse('agent-a', n));
    await new Promise((r) => setTimeout(r, 100)); // the backlog is queued; one of it runs
    const other = parse('agent-b', 'b1');
    await Promise.all([...backlog, other]);
    // b1 waits for the one runner to finish (a1, or a2 where a1 was done within the pause), then
    // goes next, ahead of the rest of agent-a's backlog; first come, first served put it last.
    expect(done.filter((n) => n !== 'b1')).toEqual(['a1', 'a2', 'a3', 'a4']);
    expect(done.indexOf('b1')).toBeLessThanOrEqual(2);
    expect(done.indexOf('b1')).toBeGreaterThanOrEqual(1);
  } finally {
    await parser.close();
  }
}, 30_000);

test('a warm runner stays up through an idle spell, and one retired after its job count is replaced ahead of the next parse', async () => {
  const { ParsePool } = await import('./pool');
  const { resolveParseLimits } = await import('./types');
  const path = join(dir, 'warm.csv');
  writeFileSync(path, 'a,b\n1,2\n');
  const job = { path, kind: 'csv' as const, contentType: 'text/csv', sizeBytes: 8, limits: resolveParseLimits({}) };
  const until = async (check: () => boolean) => {
    for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
    return check();
  };
  const kept = new ParsePool({ isolation: 'thread', idleMs: 50 });
  const cold = new ParsePool({ isolation: 'thread', idleMs: 50, keepWarm: 0 });
  const recycled = new ParsePool({ isolation: 'thread', maxJobsPerWorker: 1 });
  try {
    expect(kept.size).toBe(0); // nothing starts before the first parse
    await Promise.all([kept.run(job), cold.run(job)]);
    await new Promise((r) => setTimeout(r, 300)); // several idle periods
    expect(kept.size).toBe(1);
    expect(await until(() => cold.size === 0)).toBe(true);

    expect((await recycled.run(job)).rows).toEqual([['1', '2']]);
    // Retired after its one job; a replacement comes up without a job asking for it.
    expect(await until(() => recycled.size === 1)).toBe(true);
    expect((await recycled.run(job)).rows).toEqual([['1', '2']]);
  } finally {
    await Promise.all([kept.close(), cold.close(), recycled.close()]);
  }
}, 30_000);
