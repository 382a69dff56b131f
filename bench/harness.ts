import autocannon from 'autocannon';
import Fastify from 'fastify';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp, type App } from '../src/app';
import { loadConfig } from '../src/config';

/**
 * Shared benchmark harness: a bare Fastify route as the baseline and svc on the embedded defaults,
 * both in this process and driven by autocannon over loopback in the same run.
 */
export interface Measured {
  name: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
}

export async function drive(name: string, opts: autocannon.Options): Promise<Measured> {
  const r = await autocannon({ connections: 10, duration: 8, ...opts });
  return {
    name,
    requestsPerSecond: Math.round(r.requests.average),
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    errors: r.errors,
    non2xx: r.non2xx,
  };
}

/** A bare Fastify route returning a small JSON object: the ceiling for a route on the machine that runs the bench. */
export async function startBaseline(): Promise<{ url: string; close(): Promise<void> }> {
  const app = Fastify({ logger: false });
  app.get('/bare', async () => ({ status: 'success', agent_id: '00000000-0000-4000-8000-000000000000', tier: 'free' }));
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { url, close: () => app.close() };
}

export async function startSvc(env: Record<string, string> = {}): Promise<{ svc: App; config: ReturnType<typeof loadConfig>; url: string; close(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  const config = loadConfig({ SVC_DATA_DIR: dataDir, LOG_LEVEL: 'silent', PORT: '0', ...env });
  const svc = await buildApp({ config, logger: false });
  const url = await svc.app.listen({ host: '127.0.0.1', port: 0 });
  return {
    svc, config, url,
    async close() {
      await svc.app.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function registerAgent(url: string, name = 'bench-agent'): Promise<{ apiKey: string; agentId: string }> {
  const res = await fetch(`${url}/v1/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ agent_name: name, owner_identifier: `${name}-owner`, agree_to_terms: true }),
  });
  const body = (await res.json()) as { api_key: string; agent_id: string };
  return { apiKey: body.api_key, agentId: body.agent_id };
}

/**
 * PUT /v1/memory/{key} requests for autocannon, built once: `count` keys (`prefix` + index), each with
 * its own value. autocannon turns static requests into bytes once per connection and cycles through
 * them; a `setupRequest` callback instead rebuilds every request on the benchmark's own thread
 * (~26 µs each, measured), a cost the bare route's client does not pay and svc's server then shares
 * the thread with.
 */
export function putRequests(prefix: string, count: number, value: (i: number) => unknown) {
  return Array.from({ length: count }, (_, i) => ({
    method: 'PUT' as const, path: `/v1/memory/${prefix}${i}`, body: JSON.stringify({ value: value(i) }),
  }));
}

export function report(baseline: Measured, subject: Measured): string {
  const ratio = subject.requestsPerSecond / baseline.requestsPerSecond;
  return `${subject.name}: ${subject.requestsPerSecond} req/s (p50 ${subject.p50Ms} ms, p99 ${subject.p99Ms} ms, errors ${subject.errors}, non-2xx ${subject.non2xx}) ` +
    `vs ${baseline.name}: ${baseline.requestsPerSecond} req/s → ratio ${(ratio * 100).toFixed(1)}%`;
}

/** The median of a list of numbers (the mean of the middle two for an even count). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/**
 * Runs every subject once per round, rotating the order each round (A B C, B C A, C A B, ...), and
 * returns each round's results in the subjects' own order. A small VM's speed drifts by
 * more than the effects measured over a minute, so a ratio is taken within each round (runs made
 * seconds apart, under the same conditions) and the median over the rounds is the figure.
 */
export async function interleaved<T>(subjects: (() => Promise<T>)[], rounds: number): Promise<T[][]> {
  const out: T[][] = [];
  for (let r = 0; r < rounds; r++) {
    const row = new Array<T>(subjects.length);
    for (let k = 0; k < subjects.length; k++) {
      const i = (r + k) % subjects.length;
      row[i] = await subjects[i]();
    }
    out.push(row);
  }
  return out;
}

/** Each round's ratio of `subject` to `baseline` (requests per second), sorted, and their median. */
export function roundRatios(rounds: Measured[][], subject: number, baseline = 0): { ratios: number[]; median: number } {
  const ratios = rounds.map((r) => r[subject].requestsPerSecond / r[baseline].requestsPerSecond).sort((a, b) => a - b);
  return { ratios, median: median(ratios) };
}

export const percent = (x: number) => `${(x * 100).toFixed(1)}%`;
