/**
 * Pages a memory PUT writes: SQLite WAL frames per PUT (one frame is one 4 KiB page written at a
 * group commit), metered (past the free floor, 1 credit per write from a purchase) and unmetered,
 * PUTs of one key five at a time (batches of five, as at the metering bench's load). Unlike
 * requests per second, this count does not move with the machine's load, so it shows what a schema
 * or write-path change does to the commit's size on any machine.
 *
 *   npx tsx bench/memory-wal-frames.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import { credits } from '../src/lib/money';
import { billingModuleFor } from '../src/modules/billing/module';
import { registerAgent } from './harness';

async function framesPerPut(metered: boolean): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-frames-'));
  const config = loadConfig({
    ...process.env, SVC_DATA_DIR: dataDir, LOG_LEVEL: 'silent', PORT: '0',
    SVC_METERING_ENABLED: String(metered), SVC_MEMORY_RATE_PER_MINUTE: '0', SVC_EMBEDDINGS: 'none',
  });
  const svc = await buildApp({ config, logger: false });
  try {
    const url = await svc.app.listen({ host: '127.0.0.1', port: 0 });
    const agent = await registerAgent(url, `frames-${metered}`);
    await billingModuleFor(config)!.credits.add(agent.agentId, { kind: 'purchase', units: credits(1_000_000), ref: `bench:${agent.agentId}` });
    const headers = { authorization: `Bearer ${agent.apiKey}`, 'content-type': 'application/json' };
    const body = JSON.stringify({ value: { note: 'benchmark value', n: 42, tags: ['a', 'b', 'c'] } });
    const fives = async (n: number) => {
      for (let k = 0; k < n; k += 5) {
        await Promise.all(Array.from({ length: 5 }, () => fetch(`${url}/v1/memory/bench-key`, { method: 'PUT', headers, body }).then((r) => r.arrayBuffer())));
      }
    };
    await fives(1500); // past the 1,000 free writes: the measured ones are paid
    const sqlite = svc.database.sqlite!;
    sqlite.pragma('wal_autocheckpoint = 0');
    sqlite.pragma('wal_checkpoint(TRUNCATE)');
    await fives(2000);
    const [r] = sqlite.pragma('wal_checkpoint(PASSIVE)') as { log: number }[];
    return r.log / 2000;
  } finally {
    await svc.app.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const free = await framesPerPut(false);
const metered = await framesPerPut(true);
console.log(`WAL frames per PUT (batches of five): unmetered ${free.toFixed(2)}, metered ${metered.toFixed(2)} (metering adds ${(metered - free).toFixed(2)})`);
