/**
 * Latency of the configured embedder (default: local USE lite in its worker thread), as the service
 * sees it through Embedder.embed():
 *   - cold: the first call, which starts the thread and loads the model;
 *   - one short query, warm (median of 30);
 *   - a batch of 32 questions and a batch of 32 memory texts from dataset.json, warm (median of 7).
 * Wall time depends on what else runs on the machine, so the CPU time the process spent (all threads,
 * via process.cpuUsage) is printed beside it, with the load average.
 *
 *   npx tsx bench/retrieval/embed-latency.ts
 */
import { loadavg } from 'node:os';
import { createEmbedder, textForEmbedding } from '../../src/infra/embeddings';
import { loadConfig } from '../../src/config';
import { loadRetrievalDataset } from './eval';

const embedder = createEmbedder(loadConfig().vectors);
if (!embedder) throw new Error('SVC_EMBEDDINGS=none');
const ds = loadRetrievalDataset();
const questions = ds.questions.slice(0, 32).map((q) => q.question);
const memories = ds.memories.slice(0, 32).map((m) => textForEmbedding(m.key, m.value));

async function measure(texts: string[]) {
  const cpu = process.cpuUsage();
  const t = performance.now();
  await embedder!.embed(texts);
  const c = process.cpuUsage(cpu);
  return { wall: performance.now() - t, cpu: (c.user + c.system) / 1000 };
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
async function repeat(name: string, texts: string[], n: number) {
  const runs = [];
  for (let i = 0; i < n; i++) runs.push(await measure(texts));
  const wall = median(runs.map((r) => r.wall));
  const cpu = median(runs.map((r) => r.cpu));
  console.log(`${name.padEnd(34)} wall ${wall.toFixed(0).padStart(5)} ms   cpu ${cpu.toFixed(0).padStart(5)} ms   (median of ${n})`);
}

try {
  const cold = await measure(['what editor does the user prefer?']);
  console.log(`${embedder.modelId}, load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  console.log(`${'cold first call (start + load)'.padEnd(34)} wall ${cold.wall.toFixed(0).padStart(5)} ms   cpu ${cold.cpu.toFixed(0).padStart(5)} ms`);
  await repeat('1 short query', ['what editor does the user prefer?'], 30);
  await repeat(`32 questions (avg ${avg(questions)} chars)`, questions, 7);
  await repeat(`32 memories (avg ${avg(memories)} chars)`, memories, 7);
  console.log(`load average after ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
} finally {
  await embedder.close();
}

function avg(texts: string[]) {
  return Math.round(texts.reduce((s, t) => s + t.length, 0) / texts.length);
}
