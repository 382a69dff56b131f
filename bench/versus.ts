/**
 * The same requests against this checkout and an older one, both in this process, in the same run:
 * authenticated GET /v1/me and GET /v1/memory/{key} (req/s over loopback, autocannon), rounds with
 * the order rotated, the median of the per-round ratios new ÷ old. For a change that should cost
 * nothing on the hot paths (response schemas and their compiled serialisers: target ≥ 100 %).
 *
 *   git worktree add /tmp/svc-base <commit> && ln -s "$PWD/node_modules" /tmp/svc-base/node_modules
 *   BASE=/tmp/svc-base npx tsx bench/versus.ts     # ROUNDS (default 5), SECONDS (default 5)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { drive, interleaved, median, percent, registerAgent, type Measured } from './harness';

const BASE = process.env.BASE;
if (!BASE) throw new Error('BASE=<path of the older checkout> is required');
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const SECONDS = Number(process.env.SECONDS ?? 5);

type Started = { label: string; url: string; close(): Promise<void> };

async function start(root: string, label: string): Promise<Started> {
  const { buildApp } = (await import(join(root, 'src/app.ts'))) as typeof import('../src/app');
  const { loadConfig } = (await import(join(root, 'src/config.ts'))) as typeof import('../src/config');
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-versus-'));
  const config = loadConfig({ SVC_DATA_DIR: dataDir, LOG_LEVEL: 'silent', PORT: '0', SVC_MEMORY_RATE_PER_MINUTE: '0', SVC_METERING_ENABLED: 'false' });
  const svc = await buildApp({ config, logger: false });
  const url = await svc.app.listen({ host: '127.0.0.1', port: 0 });
  return {
    label, url,
    async close() {
      await svc.app.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const checkouts = [await start(resolve(BASE), 'old'), await start(resolve('.'), 'new')];
try {
  const subjects: (() => Promise<Measured>)[] = [];
  for (const c of checkouts) {
    const { apiKey } = await registerAgent(c.url, `versus-${c.label}`);
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    const put = await fetch(`${c.url}/v1/memory/profile.settings`, {
      method: 'PUT', headers, body: JSON.stringify({ value: { theme: 'dark', locale: 'pt-PT', notes: ['a', 'b', 'c'], limits: { daily: 20 } }, importance: 'high' }),
    });
    if (!put.ok) throw new Error(`PUT on ${c.label}: ${put.status} ${await put.text()}`);
    for (const [path, name] of [['/v1/me', 'GET /v1/me'], ['/v1/memory/profile.settings', 'GET /v1/memory/{key}']] as const) {
      const opts = { url: `${c.url}${path}`, headers: { authorization: headers.authorization }, duration: SECONDS };
      await drive('warm-up', { ...opts, duration: 2 });
      subjects.push(() => drive(`${name} ${c.label}`, opts));
    }
  }
  const rounds = await interleaved(subjects, ROUNDS);
  for (const r of rounds[0]!.map((_, i) => i).slice(0, 2)) {
    const old = r;
    const neu = r + 2;
    const ratios = rounds.map((row) => row[neu]!.requestsPerSecond / row[old]!.requestsPerSecond).sort((a, b) => a - b);
    const name = rounds[0]![old]!.name.replace(/ old$/, '');
    const oldRps = median(rounds.map((row) => row[old]!.requestsPerSecond));
    const newRps = median(rounds.map((row) => row[neu]!.requestsPerSecond));
    const bad = rounds.some((row) => row[old]!.non2xx + row[neu]!.non2xx + row[old]!.errors + row[neu]!.errors > 0);
    console.log(`${name}: new ${newRps} req/s vs old ${oldRps} req/s (medians); new ÷ old per round ${ratios.map(percent).join(', ')}; median ${percent(median(ratios))}${bad ? ' (non-2xx or errors seen!)' : ''}`);
  }
} finally {
  for (const c of checkouts) await c.close();
}
