/**
 * Extraction quality, two corpora, each run through svc's extractor and two baselines on the same
 * pages: Readability's own output (readability.js over linkedom: its textContent and its title,
 * no fallback) and the whole <body> text with the <title>.
 *
 * 1. The article corpus (bench/extraction-corpus/, 49 self-made pages in 15 languages with a
 *    reference main text and title each): main-text shingle F1 (precision, recall), the share of
 *    titles right, and, for svc, the share of pages whose byline, publication date, language and
 *    site name match what the page shows; for all 49 pages, and apart for the 8 held-out pages
 *    (written after svc's rules were frozen, so no rule was fitted to them).
 * 2. The passage corpus (test/fixtures/pages/, 20 hand-written pages): pages whose text holds all
 *    their main passages, and pages free of the listed boilerplate.
 *
 * Trafilatura, the reference the issue measures against, cannot run here (no PyPI, no Debian
 * package): its figure is not in this bench. See bench/README.md.
 * Run: npx tsx bench/extraction.ts [--verbose]
 */
import { performance } from 'node:perf_hooks';
import { parseHTML } from 'linkedom';
import { Readability } from '@mozilla/readability';
import { decodeBody } from '../src/infra/web/content';
import { extractContent, type PageMeta } from '../src/infra/web/extract';
import { loadCorpus, score, squash, type CorpusPage } from '../test/fixtures/pages/corpus';
import { loadArticleCorpus, sameTitle, shingleMatch, shingleScores, type ArticlePage } from './extraction-corpus/corpus';

const verbose = process.argv.includes('--verbose');

interface Out { title: string; text: string; method?: string; meta?: PageMeta }
type Method = (body: Buffer, url: string) => Out;
const methods: Record<string, Method> = {
  // No charset in the header on purpose: legacy pages must be decoded from their <meta>.
  svc: (body, url) => extractContent({ body, contentType: 'text/html', url }),
  'readability.js': (body) => {
    const doc = parseHTML(decodeBody(body, 'text/html', 'html')).document;
    const a = new Readability(doc as never).parse();
    return { title: a?.title ?? '', text: a?.textContent ?? '' };
  },
  'body text': (body) => {
    const doc = parseHTML(decodeBody(body, 'text/html', 'html')).document;
    return { title: doc.title ?? '', text: doc.body?.textContent ?? '' };
  },
};

const pct = (a: number, b: number) => `${((100 * a) / b).toFixed(1)}%`;

// ---- 1. article corpus: shingle F1 and titles
const articles = loadArticleCorpus();
const articleUrl = (p: ArticlePage) => `https://site.example/${p.file.replace(/\.html$/, '')}`;
console.log(`== article corpus: ${articles.length} self-made pages, ${new Set(articles.map((p) => p.lang)).size} languages (bench/extraction-corpus)`);
console.log('| method | pages | shingle F1 | precision | recall | titles right | mean warm time |');
console.log('|---|---|---|---|---|---|---|');
const details: string[] = [];
for (const [name, run] of Object.entries(methods)) {
  for (const p of articles) run(p.body, articleUrl(p)); // warm-up pass (JIT), not timed
  const rows: { set: string; m: [number, number, number]; titleOk: boolean; ms: number }[] = [];
  const fields = { byline: 0, published: 0, language: 0, site_name: 0 };
  for (const p of articles) {
    const t0 = performance.now();
    const out = run(p.body, articleUrl(p));
    const ms = performance.now() - t0;
    const m = shingleMatch(p.reference, out.text);
    const titleOk = sameTitle(out.title, p.title);
    rows.push({ set: p.set, m, titleOk, ms });
    if (out.meta) {
      if ((out.meta.byline ?? null) === p.byline) fields.byline++;
      if ((out.meta.published_at?.slice(0, 10) ?? null) === p.published) fields.published++;
      if ((out.meta.language ?? null) === p.language) fields.language++;
      if ((out.meta.site_name ?? null) === p.site_name) fields.site_name++;
    }
    if (name === 'svc' || verbose) {
      const s = shingleScores([m]);
      details.push(`  ${name.padEnd(14)} ${p.file.padEnd(30)} ${p.set.padEnd(8)} ${(out.method ?? '').padEnd(11)} F1 ${s.f1.toFixed(3)} (P ${s.precision.toFixed(2)} R ${s.recall.toFixed(2)})  title ${titleOk ? 'ok' : `MISS: ${JSON.stringify(out.title)}`}`);
      if (out.meta && verbose) details.push(`      meta ${JSON.stringify(out.meta)}`);
    }
  }
  for (const [label, subset] of [['all', rows], ['held-out', rows.filter((r) => r.set === 'held-out')]] as const) {
    const s = shingleScores(subset.map((r) => r.m));
    const titles = subset.filter((r) => r.titleOk).length;
    const ms = subset.reduce((a, r) => a + r.ms, 0) / subset.length;
    console.log(`| ${name} | ${label} (${subset.length}) | ${s.f1.toFixed(3)} | ${s.precision.toFixed(3)} | ${s.recall.toFixed(3)} | ${titles}/${subset.length} (${pct(titles, subset.length)}) | ${ms.toFixed(1)} ms |`);
  }
  if (name === 'svc') {
    const n = articles.length;
    details.unshift(`  svc metadata matching the page: byline ${fields.byline}/${n}, published date ${fields.published}/${n}, language ${fields.language}/${n}, site name ${fields.site_name}/${n}`);
  }
}
console.log(details.join('\n'));

// ---- 2. passage corpus: complete pages and boilerplate
const pages = loadCorpus();
const url = (p: CorpusPage) => `https://pages.example/${p.file}`;
console.log(`\n== passage corpus: ${pages.length} hand-written pages (test/fixtures/pages)`);
for (const [name, run] of Object.entries(methods)) {
  let complete = 0, passages = 0, found = 0, clean = 0, titles = 0;
  const rows: string[] = [];
  for (const page of pages) {
    const out = run(page.body, url(page));
    const s = score(page, out.text);
    passages += page.main.length;
    found += s.found;
    if (s.missing.length === 0) complete++;
    if (s.noiseFound.length === 0) clean++;
    if (squash(out.title).includes(squash(page.title))) titles++;
    if (verbose) {
      rows.push(`  ${s.missing.length === 0 ? 'ok  ' : 'MISS'} ${page.file.padEnd(26)} passages ${s.found}/${page.main.length}  noise ${s.noiseFound.length}/${page.noise.length}`);
      for (const m of s.missing) rows.push(`         missing: ${m.slice(0, 90)}`);
      for (const n of s.noiseFound) rows.push(`         noise:   ${n}`);
    }
  }
  console.log(`-- ${name}`);
  if (rows.length) console.log(rows.join('\n'));
  console.log(`  pages with all main passages: ${complete}/${pages.length} (${pct(complete, pages.length)})`);
  console.log(`  main passages found:          ${found}/${passages} (${pct(found, passages)})`);
  console.log(`  pages free of listed noise:   ${clean}/${pages.length} (${pct(clean, pages.length)})`);
  console.log(`  titles matched:               ${titles}/${pages.length}`);
}
