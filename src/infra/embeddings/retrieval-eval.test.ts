// The retrieval benchmark's dataset and scoring (bench/retrieval). The real model's figures are in
// docs/embeddings.md; here the fast bag-of-words baseline exercises the evaluation end to end.
import { describe, expect, test } from 'vitest';
import { evaluateRetrieval, loadRetrievalDataset, scoreRanks } from '../../../bench/retrieval/eval';
import { BagOfWordsEmbedder } from '../../../bench/retrieval/lexical';

describe('retrieval benchmark', () => {
  test('dataset: 120+ memories with unique keys, 60+ questions each answered by one of them', () => {
    const ds = loadRetrievalDataset();
    expect(ds.memories.length).toBeGreaterThanOrEqual(120);
    expect(ds.questions.length).toBeGreaterThanOrEqual(60);
    const keys = new Set(ds.memories.map((m) => m.key));
    expect(keys.size).toBe(ds.memories.length);
    for (const q of ds.questions) expect(keys.has(q.answer_key), q.answer_key).toBe(true);
  });

  test('scoreRanks: recall@k and mean reciprocal rank', () => {
    expect(scoreRanks([1, 2, 6, Infinity])).toEqual({ recallAt1: 0.25, recallAt5: 0.5, recallAt10: 0.75, mrr: (1 + 0.5 + 1 / 6) / 4 });
  });

  test('evaluateRetrieval ranks every question against every memory', async () => {
    const small = {
      memories: [
        { key: 'user.prefs:editor', value: { editor: 'Neovim' } },
        { key: 'infra:backups', value: 'restic nightly at 02:00' },
        { key: 'fact:plants', value: 'water the monstera weekly' },
      ],
      questions: [
        { question: 'which editor?', answer_key: 'user.prefs:editor' },
        { question: 'when do backups run?', answer_key: 'infra:backups' },
        { question: 'unrelated words only', answer_key: 'fact:plants' },
      ],
    };
    const r = await evaluateRetrieval(new BagOfWordsEmbedder(), undefined, small);
    expect(r).toMatchObject({ modelId: 'baseline:bag-of-words', memories: 3, questions: 3, recallAt5: 1 });
    // The third question shares no word with any memory: all tie at 0 and its answer comes last.
    expect(r.recallAt1).toBeCloseTo(2 / 3, 6);
    expect(r.mrr).toBeCloseTo((1 + 1 + 1 / 3) / 3, 6);
    expect(r.misses).toEqual([]); // a miss is a rank past 5
    await expect(evaluateRetrieval(new BagOfWordsEmbedder(), undefined, { ...small, questions: [{ question: 'x', answer_key: 'nope' }] }))
      .rejects.toThrow(/not a memory/);
  });
});
