import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestDatabase, type TestDatabase } from './helpers/engines';

/**
 * Acknowledged writes survive a kill -9. The real server (`npx tsx src/main.ts`) runs as a child
 * process on the engine under test (SQLite file in a temp dir, or the PostgreSQL/PGlite server);
 * a stream of PUTs is cut by SIGKILL to the whole process group; after a restart every PUT that got
 * a 2xx reads back exactly.
 */
let tdb: TestDatabase;
let child: ChildProcess | undefined;
beforeAll(async () => {
  tdb = await createTestDatabase();
});
afterAll(async () => {
  if (child?.pid && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
  await tdb?.close();
});

async function startServer(): Promise<string> {
  const env = {
    ...process.env, ...tdb.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', SVC_EMBEDDINGS: 'none', SVC_MEMORY_RATE_PER_MINUTE: '0',
  };
  for (let attempt = 0; ; attempt++) {
    child = spawn('npx', ['tsx', 'src/main.ts'], { cwd: process.cwd(), env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const c = child;
    let err = '';
    c.stderr!.on('data', (d) => (err += d));
    const url = await new Promise<string | undefined>((resolve) => {
      let out = '';
      c.stdout!.on('data', (d) => {
        out += d;
        const m = /svc listening on (http:\/\/\S+)/.exec(out);
        if (m) resolve(m[1]);
      });
      c.on('exit', () => resolve(undefined));
    });
    if (url) return url;
    // PGlite's one-connection socket server may still be releasing the killed server's connection.
    if (attempt >= 5) throw new Error(`server did not start: ${err}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

function killHard(): Promise<void> {
  const c = child!;
  return new Promise((resolve) => {
    c.on('exit', () => resolve());
    process.kill(-c.pid!, 'SIGKILL');
  });
}

test('kill -9 in the middle of a stream of PUTs: every 2xx write is there after a restart', async () => {
  let url = await startServer();
  const reg = await fetch(`${url}/v1/register`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ agent_name: 'durable', owner_identifier: 'o', agree_to_terms: true }),
  }).then((r) => r.json() as Promise<{ api_key: string }>);
  const headers = { authorization: `Bearer ${reg.api_key}`, 'content-type': 'application/json' };

  const acked = new Map<string, unknown>();
  let failed = 0;
  let next = 0;
  let stop = false;
  const writer = async () => {
    while (!stop) {
      const i = next++;
      const key = `w.${i}`;
      const value = { i, text: `write number ${i}`, pad: 'x'.repeat(i % 500) };
      try {
        const res = await fetch(`${url}/v1/memory/${key}`, { method: 'PUT', headers, body: JSON.stringify({ value, importance: 'high' }) });
        if (res.status === 200) acked.set(key, value);
        else failed++;
        await res.arrayBuffer();
      } catch {
        failed++; // connection cut by the kill: not acknowledged
        if (stop) return;
      }
    }
  };
  const writers = Array.from({ length: 8 }, writer);
  while (acked.size < 150) await new Promise((r) => setTimeout(r, 10));
  await killHard(); // writes are still in flight
  stop = true;
  await Promise.all(writers);
  expect(acked.size).toBeGreaterThanOrEqual(150);
  expect(failed).toBeGreaterThan(0); // the kill did cut requests in flight

  url = await startServer();
  for (const [key, value] of acked) {
    const res = await fetch(`${url}/v1/memory/${key}`, { headers });
    expect(res.status, key).toBe(200);
    expect(((await res.json()) as { value: unknown }).value).toEqual(value);
  }
  const list = await fetch(`${url}/v1/memory?per_page=1`, { headers }).then((r) => r.json() as Promise<{ total: number }>);
  expect(list.total).toBeGreaterThanOrEqual(acked.size);
  const stats = await fetch(`${url}/v1/memory/stats`, { headers }).then((r) => r.json() as Promise<{ ops_this_month: number }>);
  expect(stats.ops_this_month).toBe(list.total); // counters moved in the same transactions as the values
  await killHard();
}, 180_000);
