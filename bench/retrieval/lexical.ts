/**
 * Baseline for the retrieval benchmark: a hashed bag of words (lower-cased words, a trailing "s"
 * dropped, common words skipped). It finds a memory only through shared words, so the gap between it
 * and a real embedder shows what the embedder adds on reworded questions.
 */
import { normaliseInPlace, type Embedder } from '../../src/infra/embeddings';

const STOP = new Set('a an the is are was were be do does did of to in on for and or with by at from it its this that what which who when where why how i we you they my our their'.split(' '));

export class BagOfWordsEmbedder implements Embedder {
  readonly modelId = 'baseline:bag-of-words';
  readonly dimensions = 4096;

  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((t) => {
      const v = new Float32Array(this.dimensions);
      for (const raw of t.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
        if (STOP.has(raw)) continue;
        const word = raw.length > 3 ? raw.replace(/s$/, '') : raw;
        let h = 2166136261;
        for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 16777619) >>> 0;
        v[h % this.dimensions] += 1;
      }
      return normaliseInPlace(v);
    });
  }

  async close(): Promise<void> {}
}
