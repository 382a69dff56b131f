/**
 * Extraction quality on the hand-written corpus in test/fixtures/pages: the share of pages whose
 * extracted text contains ALL of the page's main passages (the headline figure recorded in
 * docs/outbound-web.md), plus passage recall, pages free of the listed boilerplate, title hits
 * and warm time per page. Two baselines run on the same pages so the figure has a reference:
 * Readability's own textContent with no fallback, and the whole <body> text.
 * Run: npx tsx bench/extraction.ts [--verbose]
 */
import { performance } from 'node:perf_hooks';
import { parseHTML } from 'linkedom';
import { Readability } from '@mozilla/readability';
import { decodeBody } from '../src/infra/web/content';
import { extractContent } from '../src/infra/web/extract';
import { loadCorpus, score, squash, type CorpusPage } from '../test/fixtures/pages/corpus';

const verbose = process.argv.includes('--verbose');
const pages = loadCorpus();
const url = (p: CorpusPage) => `https://pages.example/${p.file}`;

type Method = (p: CorpusPage) => { title: string; text: string; method?: string };
const methods: Record<string, Method> = {
  // No charset in the header on purpose: the legacy page must be decoded from its <meta>.
  svc: (p) => extractContent({ body: p.body, contentType: 'text/html', url: url(p) }),
  'readability-only': (p) => {
    const doc = parseHTML(decodeBody(p.body, 'text/html', 'html')).document;
    const a = new Readability(doc as never).parse();
    return { title: a?.title ?? '', text: a?.textContent ?? '' };
  },
  'body-text': (p) => {
    const doc = parseHTML(decodeBody(p.body, 'text/html', 'html')).document;
    return { title: doc.title ?? '', text: doc.body?.textContent ?? '' };
  },
};

const pct = (a: number, b: number) => `${((100 * a) / b).toFixed(1)}%`;
for (const [name, run] of Object.entries(methods)) {
  for (const p of pages) run(p); // warm-up pass (JIT), not timed
  let complete = 0, passages = 0, found = 0, clean = 0, titles = 0, ms = 0;
  const rows: string[] = [];
  for (const page of pages) {
    const t0 = performance.now();
    const out = run(page);
    const dt = performance.now() - t0;
    ms += dt;
    const s = score(page, out.text);
    passages += page.main.length;
    found += s.found;
    if (s.missing.length === 0) complete++;
    if (s.noiseFound.length === 0) clean++;
    if (squash(out.title).includes(squash(page.title))) titles++;
    rows.push(`  ${s.missing.length === 0 ? 'ok  ' : 'MISS'} ${page.file.padEnd(26)} ${(out.method ?? '').padEnd(11)} passages ${s.found}/${page.main.length}  noise ${s.noiseFound.length}/${page.noise.length}  ${dt.toFixed(1)} ms`);
    if (verbose) {
      for (const m of s.missing) rows.push(`         missing: ${m.slice(0, 90)}`);
      for (const n of s.noiseFound) rows.push(`         noise:   ${n}`);
    }
  }
  console.log(`\n== ${name}`);
  if (name === 'svc' || verbose) console.log(rows.join('\n'));
  console.log(`  pages with all main passages: ${complete}/${pages.length} (${pct(complete, pages.length)})`);
  console.log(`  main passages found:          ${found}/${passages} (${pct(found, passages)})`);
  console.log(`  pages free of listed noise:   ${clean}/${pages.length} (${pct(clean, pages.length)})`);
  console.log(`  titles matched:               ${titles}/${pages.length}`);
  console.log(`  mean warm time per page:      ${(ms / pages.length).toFixed(1)} ms`);
}
