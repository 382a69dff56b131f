/**
 * The metering call alone, in process: N sequential charges (each its own transaction: latency)
 * and N concurrent charges (group-committed: throughput), on one agent past its free floor,
 * against the same number of bare single-row inserts+commits on the same database as the baseline
 * (a metered route's own write costs at least that). Engine as configured (SQLite default).
 *
 * Then the charge as a metered memory write makes it: `chargeWithin` through the memory meter port,
 * five per transaction scope (a write batch at the metering bench's load), committed through
 * commit-sync without a flush, against the same empty transactions; CPU time per charge
 * (process.cpuUsage), which moves far less from run to run on a shared VM than requests per second.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import { credits } from '../src/lib/money';
import { newId } from '../src/lib/ids';
import { billingModuleFor } from '../src/modules/billing/module';
import { memoryMeterFrom } from '../src/modules/billing/memory-meter';
import { withScope } from '../src/infra/db/trx-scope';

const N = Number(process.env.N ?? 1000);
const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-charge-'));
const config = loadConfig({ ...process.env, SVC_DATA_DIR: dataDir, LOG_LEVEL: 'silent', PORT: '0' });
const svc = await buildApp({ config, logger: false });
const m = billingModuleFor(config)!;
const db = svc.database.db;
await sql`create table bench_rows (id text primary key, v text)`.execute(db);
const agent = newId();
await m.credits.add(agent, { kind: 'purchase', units: credits(1_000_000), ref: `bench:${agent}` });

const time = async (f: () => Promise<unknown>) => { const t0 = performance.now(); await f(); return performance.now() - t0; };
const seq = async (f: () => Promise<unknown>) => { for (let i = 0; i < N; i++) await f(); };
const par = (f: () => Promise<unknown>) => Promise.all(Array.from({ length: N }, f));
const insert = () => db.insertInto('bench_rows' as any).values({ id: newId(), v: 'x' }).execute();
const charge = () => m.metering.charge(agent, 'memory_write', { tier: 'free' });

try {
  await seq(charge); // warm up and use the free floor (1,000)
  const rows: string[] = [];
  for (let round = 0; round < 2; round++) {
    const bi = await time(() => seq(insert));
    const mc = await time(() => seq(charge));
    const bp = await time(() => par(insert));
    const mp = await time(() => par(charge));
    rows.push(`| ${svc.database.engine} | ${(bi / N).toFixed(3)} | ${(mc / N).toFixed(3)} | ${(mc / bi).toFixed(2)} | ${(bp / N).toFixed(3)} | ${(mp / N).toFixed(3)} | ${(mp / bp).toFixed(2)} |`);
  }
  console.log('| engine | insert+commit ms (seq) | charge ms (seq) | ratio | insert ms/op (concurrent) | charge ms/op (concurrent) | ratio |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(r);
  console.log(`balance ${(await m.metering.usage(agent)).credits_remaining_usd} USD after ${4 * N + N} charges`);

  // Held charges, as a memory write batch makes them (SQLite: commit-sync; PostgreSQL: a plain transaction).
  const meter = memoryMeterFrom(m.metering);
  const B = 5;
  const BATCHES = Number(process.env.BATCHES ?? 3000);
  const batch = async (metered: boolean) => {
    const charges = await svc.database.commits.transaction((trx) => withScope(trx, async () => {
      const out = [];
      for (let i = 0; i < B; i++) if (metered) out.push(await meter.chargeWrite(trx, agent, 'spark'));
      return out;
    }));
    for (const c of charges) await c.committed();
  };
  for (let i = 0; i < 1000; i++) await batch(true);
  const cpuPerCharge = async (metered: boolean) => {
    const c0 = process.cpuUsage();
    for (let i = 0; i < BATCHES; i++) await batch(metered);
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / (BATCHES * B);
  };
  console.log(`\n| engine | empty batch, CPU µs per slot | held charge, CPU µs per charge | metering's CPU per charge |`);
  console.log('|---|---|---|---|');
  for (let round = 0; round < 3; round++) {
    const empty = await cpuPerCharge(false);
    const held = await cpuPerCharge(true);
    console.log(`| ${svc.database.engine} | ${empty.toFixed(1)} | ${held.toFixed(1)} | ${(held - empty).toFixed(1)} |`);
  }
} finally {
  await svc.app.close();
  rmSync(dataDir, { recursive: true, force: true });
}
