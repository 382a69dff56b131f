/**
 * What the retrieval benches share: the plain BM25 baseline, rank-based measures and the table, and
 * the seeded random numbers and vectors their generated data is made from.
 */

/** A seeded uniform generator in [0, 1) (mulberry32): the same data on every run. */
export function rng(seed: number) {
  let x = seed >>> 0;
  return () => {
    x = (x + 0x6d2b79f5) >>> 0;
    let t = x;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal numbers from a uniform generator (Box–Muller). */
export const gaussian = (r: () => number) => () => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());

/** `v` scaled to unit length, in place. */
export function unit(v: Float32Array): Float32Array {
  let n = 0;
  for (const x of v) n += x * x;
  n = Math.sqrt(n) || 1;
  for (let i = 0; i < v.length; i++) v[i]! /= n;
  return v;
}

/**
 * Plain BM25 over `texts` (lower-cased words split on non-letters, no stemming, no stop words,
 * k1 = 1.2, b = 0.75): returns the indexes of the best `k` texts for a query.
 */
export function plainBm25(texts: string[]): (q: string, k: number) => number[] {
  const toks = (s: string) => s.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  const postings = new Map<string, Map<number, number>>();
  const lens: number[] = [];
  texts.forEach((text, i) => {
    const t = toks(text);
    lens.push(t.length);
    for (const w of t) {
      let p = postings.get(w);
      if (!p) postings.set(w, (p = new Map()));
      p.set(i, (p.get(i) ?? 0) + 1);
    }
  });
  const n = texts.length;
  const avg = lens.reduce((a, b) => a + b, 0) / n;
  return (q, k) => {
    const scores = new Map<number, number>();
    for (const w of new Set(toks(q))) {
      const p = postings.get(w);
      if (!p) continue;
      const idf = Math.log(1 + (n - p.size + 0.5) / (p.size + 0.5));
      for (const [i, tf] of p) scores.set(i, (scores.get(i) ?? 0) + idf * (tf * 2.2) / (tf + 1.2 * (0.25 + 0.75 * lens[i]! / avg)));
    }
    return [...scores.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, k).map(([i]) => i);
  };
}

/** 1-based rank of the first relevant entry of `ranked`, Infinity when none is. */
export const firstRelevant = (ranked: string[], relevant: (id: string) => boolean) => {
  const i = ranked.findIndex(relevant);
  return i < 0 ? Infinity : i + 1;
};
/** nDCG@10 of one question with binary judgements and the first relevant entry at rank r (ideal DCG 1). */
export const ndcg10 = (r: number) => (r <= 10 ? 1 / Math.log2(r + 1) : 0);
export const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;

export interface Ranked<K extends string> { kind: K; rank: number }

/** nDCG@10 and Recall@20 per mode, overall and per kind of question, as a Markdown table. */
export function table<K extends string>(ranks: Record<string, Ranked<K>[]>, kinds: K[]): string[] {
  const total = Object.values(ranks)[0]!;
  const cols = ['all', ...kinds];
  const cell = (rs: Ranked<K>[]) => `${(rs.reduce((a, x) => a + ndcg10(x.rank), 0) / rs.length).toFixed(3)} / ${(100 * rs.filter((x) => x.rank <= 20).length / rs.length).toFixed(1)} %`;
  return [
    `| mode | ${cols.map((k) => `${k} (${k === 'all' ? total.length : total.filter((x) => x.kind === k).length})`).join(' | ')} |`,
    `|---|${cols.map(() => '---').join('|')}|`,
    ...Object.entries(ranks).map(([m, rs]) => `| ${m} | ${cols.map((k) => cell(rs.filter((x) => k === 'all' || x.kind === k))).join(' | ')} |`),
  ];
}

export const meanNdcg = (rs: { rank: number }[]) => rs.reduce((a, x) => a + ndcg10(x.rank), 0) / rs.length;
