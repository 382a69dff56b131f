/**
 * Retrieval quality of an embedder on the labelled set in dataset.json: every memory is embedded
 * (as `textOf(key, value)`), every question is embedded, memories are ranked by cosine similarity,
 * and the rank of the memory that answers the question gives recall@k and MRR.
 *
 *   npx tsx bench/retrieval/eval.ts            # the embedder the SVC_EMBEDDINGS* settings select (default local)
 *   npx tsx bench/retrieval/eval.ts --lexical  # also a bag-of-words baseline, for scale
 *
 * evaluateRetrieval() takes any Embedder; scoreRanks() scores rankings made some other way (for
 * example by the memory search route of a running service).
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { cosine, createEmbedder, textForEmbedding, type Embedder } from '../../src/infra/embeddings';
import { loadConfig } from '../../src/config';
import { BagOfWordsEmbedder } from './lexical';

export interface RetrievalDataset {
  memories: { key: string; value: unknown }[];
  questions: { question: string; answer_key: string }[];
}

export interface RetrievalReport {
  modelId: string;
  memories: number;
  questions: number;
  recallAt1: number;
  recallAt5: number;
  recallAt10: number;
  /** Mean reciprocal rank of the answering memory over the full ranking. */
  mrr: number;
  /** Questions whose answer was not in the top 5, with the rank it had (1-based) and what came first. */
  misses: { question: string; answer_key: string; rank: number; top: string }[];
  embedMs: number;
}

export function loadRetrievalDataset(): RetrievalDataset {
  return JSON.parse(readFileSync(new URL('./dataset.json', import.meta.url), 'utf8')) as RetrievalDataset;
}

/** Metrics from 1-based ranks of the right answer (Infinity when it was not returned at all). */
export function scoreRanks(ranks: number[]) {
  const n = ranks.length;
  const within = (k: number) => ranks.filter((r) => r <= k).length / n;
  return {
    recallAt1: within(1),
    recallAt5: within(5),
    recallAt10: within(10),
    mrr: ranks.reduce((s, r) => s + (Number.isFinite(r) ? 1 / r : 0), 0) / n,
  };
}

export async function evaluateRetrieval(
  embedder: Pick<Embedder, 'embed' | 'modelId'>,
  textOf: (key: string, value: unknown) => string = textForEmbedding,
  dataset: RetrievalDataset = loadRetrievalDataset(),
): Promise<RetrievalReport> {
  const started = performance.now();
  const memoryVectors = await embedder.embed(dataset.memories.map((m) => textOf(m.key, m.value)));
  const questionVectors = await embedder.embed(dataset.questions.map((q) => q.question));
  const embedMs = performance.now() - started;

  const ranks: number[] = [];
  const misses: RetrievalReport['misses'] = [];
  dataset.questions.forEach((q, i) => {
    const ranked = dataset.memories
      .map((m, j) => ({ key: m.key, score: cosine(questionVectors[i], memoryVectors[j]) }))
      .sort((a, b) => b.score - a.score);
    const rank = ranked.findIndex((r) => r.key === q.answer_key) + 1;
    if (rank === 0) throw new Error(`answer_key ${q.answer_key} is not a memory of the dataset`);
    ranks.push(rank);
    if (rank > 5) misses.push({ question: q.question, answer_key: q.answer_key, rank, top: ranked[0].key });
  });
  return {
    modelId: embedder.modelId,
    memories: dataset.memories.length,
    questions: dataset.questions.length,
    ...scoreRanks(ranks),
    misses,
    embedMs,
  };
}

function print(r: RetrievalReport): void {
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  console.log(`${r.modelId}: ${r.memories} memories, ${r.questions} questions, embedded in ${r.embedMs.toFixed(0)} ms`);
  console.log(`  recall@1 ${pct(r.recallAt1)}  recall@5 ${pct(r.recallAt5)}  recall@10 ${pct(r.recallAt10)}  MRR ${r.mrr.toFixed(3)}`);
  for (const m of r.misses) console.log(`  miss (rank ${m.rank}, top ${m.top}): ${m.question} -> ${m.answer_key}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const embedder = createEmbedder(loadConfig().vectors);
  if (!embedder) throw new Error('SVC_EMBEDDINGS=none: nothing to evaluate');
  try {
    print(await evaluateRetrieval(embedder));
    if (process.argv.includes('--lexical')) print(await evaluateRetrieval(new BagOfWordsEmbedder()));
  } finally {
    await embedder.close();
  }
}
