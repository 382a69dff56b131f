/**
 * Page extraction: the corpus of test/fixtures/pages (each page's main passages present, most
 * boilerplate gone), plain text, charsets, refusals of PDFs and binaries, text layout, and the
 * worker-thread extractor.
 */
import { performance } from 'node:perf_hooks';
import { afterAll, describe, expect, test } from 'vitest';
import { loadCorpus, score } from '../../../test/fixtures/pages/corpus';
import { extractContent, extractHtml } from './extract';
import { createExtractor } from './extractor';

const corpus = loadCorpus();

describe('corpus', () => {
  test.each(corpus.map((p) => [p.file, p] as const))('%s: main passages kept, title found', (_file, page) => {
    const out = extractContent({ body: page.body, contentType: 'text/html', url: `https://pages.example/${page.file}` });
    const s = score(page, out.text);
    expect(s.missing).toEqual([]);
    expect(out.title).toContain(page.title);
  });

  test('boilerplate is left out of most pages', () => {
    let clean = 0;
    for (const page of corpus) {
      const out = extractContent({ body: page.body, contentType: 'text/html' });
      if (score(page, out.text).noiseFound.length === 0) clean++;
    }
    // 18 of 20 at the time of writing (docs/outbound-web.md); a regression below 16 fails.
    expect(clean).toBeGreaterThanOrEqual(16);
  });
});

describe('HTML', () => {
  test('scripts, styles and hidden nodes are not text; blocks become lines', () => {
    const out = extractHtml(`<html><head><title> A  page </title><style>p{color:red}</style></head><body>
      <p>First   line</p><script>var secret = 1;</script><div hidden>hidden text</div><p style="display:none">also hidden</p>
      <ul><li>one</li><li>two</li></ul><table><tr><td>a</td><td>b</td></tr></table><pre>  keep
    this</pre></body></html>`);
    expect(out.title).toBe('A page');
    expect(out.text).toBe('First line\n\none\ntwo\n\na\tb\n\n  keep\n    this');
    expect(out.method).toBe('fallback');
  });

  test('charset from the header, from <meta>, and UTF-8 by default', () => {
    const latin1 = Buffer.from('<html><head><title>Caf\xe9</title></head><body><p>Cr\xe8me br\xfbl\xe9e</p></body></html>', 'latin1');
    expect(extractContent({ body: latin1, contentType: 'text/html; charset=iso-8859-1' }).text).toBe('Crème brûlée');
    const withMeta = Buffer.concat([Buffer.from('<html><head><meta charset="windows-1252"><title>x</title></head><body><p>'), Buffer.from('\x93quoted\x94', 'latin1'), Buffer.from('</p></body></html>')]);
    expect(extractContent({ body: withMeta, contentType: 'text/html' }).text).toBe('“quoted”');
    expect(extractContent({ body: Buffer.from('<p>naïve café</p>'), contentType: 'text/html' }).text).toBe('naïve café');
  });

  test('an untyped body that looks like HTML is treated as HTML', () => {
    const out = extractContent({ body: Buffer.from('<!doctype html><html><head><title>T</title></head><body><p>Hello</p></body></html>'), contentType: '' });
    expect(out).toMatchObject({ title: 'T', text: 'Hello' });
  });
});

describe('plain text and other types', () => {
  test('text/plain passes through', () => {
    const out = extractContent({ body: Buffer.from('line one\r\nline two\n'), contentType: 'text/plain; charset=utf-8' });
    expect(out).toEqual({ title: '', text: 'line one\nline two', meta: { byline: null, published_at: null, language: null, site_name: null }, method: 'plain' });
  });

  test('JSON and Markdown are text', () => {
    expect(extractContent({ body: Buffer.from('{"a":1}'), contentType: 'application/json' }).text).toBe('{"a":1}');
    expect(extractContent({ body: Buffer.from('# Title\n\ntext'), contentType: 'text/markdown' }).method).toBe('plain');
  });

  test.each([
    ['application/pdf', Buffer.from('%PDF-1.7\n...')],
    ['application/octet-stream', Buffer.from('%PDF-1.4 mislabeled')],
    ['text/html', Buffer.from('%PDF-1.4 mislabeled as html')],
    ['image/png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])],
    ['application/zip', Buffer.from('PK\x03\x04')],
    ['', Buffer.from([0x00, 0x01, 0x02, 0x03])],
  ])('%s is refused as BROWSE_PROVIDER_ERROR (unsupported_content_type)', (contentType, body) => {
    expect(() => extractContent({ body, contentType })).toThrow(expect.objectContaining({ code: 'BROWSE_PROVIDER_ERROR', reason: 'unsupported_content_type' }));
  });
});

describe('extractor in a worker thread', () => {
  const extractor = createExtractor({ timeoutMs: 20_000 });
  afterAll(() => extractor.close());

  test('gives the same result as in-process extraction', async () => {
    const page = corpus[0];
    const input = { body: page.body, contentType: 'text/html', url: 'https://pages.example/a' };
    expect(await extractor.extract(input)).toEqual(extractContent(input));
  });

  test('passes typed errors back', async () => {
    await expect(extractor.extract({ body: Buffer.from('%PDF-1.4'), contentType: 'application/pdf' })).rejects.toMatchObject({ code: 'BROWSE_PROVIDER_ERROR', reason: 'unsupported_content_type' });
  });

  test('a page\'s time limit starts when the thread can work on it: a thread slow to load does not fail the first page', async () => {
    // The real worker, loaded only after 1.5 s: over the page's 1 s limit before the thread is ready.
    const slowStart = createExtractor({ timeoutMs: 1000, workerUrl: new URL('./fixtures/slow-start-worker.ts', import.meta.url) });
    try {
      const started = performance.now();
      expect((await slowStart.extract({ body: Buffer.from('<p>first page</p>'), contentType: 'text/html' })).text).toBe('first page');
      expect(performance.now() - started).toBeGreaterThan(1500);
    } finally {
      await slowStart.close();
    }
  });

  test('a thread that is not ready within its start-up limit fails the page waiting for it', async () => {
    const stuck = createExtractor({ timeoutMs: 20_000, startupLimitMs: 1 });
    try {
      await expect(stuck.extract({ body: Buffer.from('<p>never read</p>'), contentType: 'text/html' }))
        .rejects.toMatchObject({ code: 'BROWSE_PROVIDER_ERROR', reason: 'extraction_failed', message: expect.stringContaining('could not start') });
    } finally {
      await stuck.close();
    }
  });

  test('a page over the time limit fails and the next page still works', async () => {
    const slowOne = createExtractor({ timeoutMs: 1 });
    const big = Buffer.from(`<html><body>${'<div><p>paragraph, with commas, and words</p></div>'.repeat(5000)}</body></html>`);
    await expect(slowOne.extract({ body: big, contentType: 'text/html' })).rejects.toMatchObject({ code: 'BROWSE_PROVIDER_ERROR', reason: 'extraction_failed' });
    await slowOne.close();
    expect((await extractor.extract({ body: Buffer.from('<p>still fine</p>'), contentType: 'text/html' })).text).toBe('still fine');
  });
});
