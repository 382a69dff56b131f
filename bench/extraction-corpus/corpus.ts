/**
 * The self-made article corpus of bench/extraction.ts (49 pages written by hand, 15 languages,
 * news, blogs, docs, forum, Q&A, shop, wiki, press release, table layout, AMP, live blog, pages
 * whose text is only in <noscript> or a template). See expected.json's `_doc` for how each page's
 * reference main text is marked, and bench/README.md. 41 pages ('tuning') were used while the
 * extraction rules were adjusted; 8 ('held-out') were written after the rules were frozen.
 *
 * The shingle score is the one public article-extraction benchmarks use: the text is split into
 * word tokens (runs of letters, digits, marks and `_`, as Python's `\w+`; case kept), taken as
 * overlapping 4-token shingles; per page the true positives, false positives and false negatives
 * of the shingle multisets are normalised to sum 1, precision and recall are averaged over pages,
 * and F1 is the harmonic mean of the two averages.
 */
import { readFileSync } from 'node:fs';
import { decodeBody } from '../../src/infra/web/content';

export interface ArticlePage {
  file: string;
  lang: string;
  layout: string;
  title: string;
  byline: string | null;
  published: string | null;
  site_name: string | null;
  language: string | null;
  /** 'tuning': used while the rules were written; 'held-out': written after, never used to change them. */
  set: 'tuning' | 'held-out';
  body: Buffer;
  /** The reference main text. */
  reference: string;
}

const dir = new URL('./', import.meta.url);

const CP1252_HIGH = '€\x81‚ƒ„…†‡ˆ‰Š‹Œ\x8dŽ\x8f\x90‘’“”•–—˜™š›œ\x9džŸ';
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', hellip: '…', ldquo: '“', rdquo: '”', lsquo: '‘', rsquo: '’', mdash: '—', ndash: '–', copy: '©' };
const decodeEntities = (s: string) => s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
  if (e[0] === '#') {
    const n = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
    // HTML maps the C1 range to windows-1252 (&#150; is an en dash).
    return n >= 0x80 && n <= 0x9f ? CP1252_HIGH[n - 0x80] : String.fromCodePoint(n);
  }
  return ENTITIES[e.toLowerCase()] ?? m;
});

/** The reference main text of a marked page (expected.json `_doc`). */
export function referenceText(html: string): string {
  const parts = [...html.matchAll(/<!--ref-->([\s\S]*?)<!--\/ref-->/g)].map((m) => m[1]);
  return parts.map((p) => decodeEntities(p
    .replace(/<!--skip-->[\s\S]*?<!--\/skip-->/g, ' ')
    .replace(/<!--text:([\s\S]*?)-->/g, ' $1 ')
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<(script|style)\b[\s\S]*?<\/\1>/gi, ' ')
    .replace(/<[^>]+>/g, ' '))
    .replace(/\s+/g, ' ').trim()).join('\n');
}

export function loadArticleCorpus(): ArticlePage[] {
  const spec = JSON.parse(readFileSync(new URL('expected.json', dir), 'utf8')) as { pages: Omit<ArticlePage, 'body' | 'reference'>[] };
  return spec.pages.map((p) => {
    const body = readFileSync(new URL(p.file, dir));
    return { ...p, body, reference: referenceText(decodeBody(body, 'text/html', 'html')) };
  });
}

const TOKEN = /[\p{L}\p{N}\p{M}_]+/gu;

function shingles(text: string, n = 4): Map<string, number> {
  const tokens = text.match(TOKEN) ?? [];
  const out = new Map<string, number>();
  for (let i = 0; i < Math.max(1, tokens.length - n + 1); i++) {
    const key = tokens.slice(i, i + n).join('\u0001');
    if (key) out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}

/** Normalised [tp, fp, fn] of one page's 4-token shingles. */
export function shingleMatch(truth: string, predicted: string): [number, number, number] {
  const t = shingles(truth);
  const p = shingles(predicted);
  let tp = 0, fp = 0, fn = 0;
  for (const key of new Set([...t.keys(), ...p.keys()])) {
    const a = t.get(key) ?? 0;
    const b = p.get(key) ?? 0;
    tp += Math.min(a, b);
    fp += Math.max(0, b - a);
    fn += Math.max(0, a - b);
  }
  const s = tp + fp + fn;
  return s > 0 ? [tp / s, fp / s, fn / s] : [0, 0, 0];
}

const precisionOf = ([tp, fp, fn]: number[]) => (fp === 0 && fn === 0 ? 1 : tp === 0 && fp === 0 ? 0 : tp / (tp + fp));
const recallOf = ([tp, fp, fn]: number[]) => (fp === 0 && fn === 0 ? 1 : tp === 0 && fn === 0 ? 0 : tp / (tp + fn));
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Precision and recall averaged over pages, and F1 of the two averages. */
export function shingleScores(matches: [number, number, number][]): { precision: number; recall: number; f1: number } {
  const precision = mean(matches.filter(([tp, fp]) => tp + fp > 0).map(precisionOf));
  const recall = mean(matches.filter(([tp, , fn]) => tp + fn > 0).map(recallOf));
  return { precision, recall, f1: (2 * precision * recall) / (precision + recall) };
}

/** Titles compared as a reader would: case, spacing, punctuation and quote styles ignored. */
export const sameTitle = (a: string | null | undefined, b: string | null | undefined): boolean => {
  const n = (s: string | null | undefined) => (s ?? '').normalize('NFKC').toLowerCase().replace(/[^\p{L}\p{N}]+/gu, ' ').trim();
  return n(a) === n(b);
};
