/**
 * Regression pages for extraction defects: each page is written here, small and to the point.
 */
import { describe, expect, test } from 'vitest';
import { prescanCharset } from './content';
import { extractContent, extractHtml } from './extract';

const PARAS = [
  'Tide tables give the time and height of high and low water for each day of the year at a named port, and most harbour offices still print them every winter.',
  'The height is measured from chart datum, a level so low that the tide seldom falls below it, which is why a negative figure in the table is worth a second look before you plan a crossing.',
  'Spring tides come a day or two after the full and the new moon, when the sun and the moon pull in line; neap tides fall between them and have the smallest range of the month.',
  'Between the printed times the water does not rise evenly: the rule of twelfths says one twelfth in the first hour, two in the second, three in the third and fourth, then two and one again.',
  'Wind and pressure shift the real tide away from the table, so a strong onshore gale and a deep low together can add half a metre to a high water that the table calls ordinary.',
];
const body = PARAS.map((p) => `<p>${p}</p>`).join('\n');
const FOOTER = '<footer><p>Coastal Notes is written by volunteers of the harbour society. All text is licensed for reuse with credit. Contact the editors through the harbour office during opening hours, Monday to Friday.</p><p><a href="/about">About</a> <a href="/privacy">Privacy</a></p></footer>';

// The rest of the page outweighs the article (the old rule removed a named box holding under 30 % of the text).
const COMMENTS = Array.from({ length: 8 }, (_, i) => `<li class="comment"><b>reader${i}</b> <p>Thanks for this, I sail out of a small drying harbour and I keep forgetting how much the pressure matters; last autumn we sat on the mud for two hours longer than the table said we would, comment number ${i}.</p></li>`).join('');
const RELATED = `<div class="related"><h3>More from Coastal Notes</h3><ul>${Array.from({ length: 12 }, (_, i) => `<li><a href="/n/${i}">Harbour news item ${i}: moorings, dredging and the winter lift-out schedule</a></li>`).join('')}</ul></div>`;

function page(containerAttrs: string): string {
  return `<!doctype html><html><head><title>Reading tide tables</title></head><body>
<header><nav><a href="/">Home</a> <a href="/tides">Tides</a> <a href="/boats">Boats</a></nav></header>
<div class="site-wrap"><div ${containerAttrs}><h1>Reading tide tables</h1>
${body}
<div class="share-buttons"><a href="https://x.example/share">Share on X</a> <a href="https://fb.example/share">Share on Facebook</a></div>
</div>
<section class="comments"><h2>Comments</h2><ol>${COMMENTS}</ol></section>
${RELATED}</div>
${FOOTER}</body></html>`;
}

const passages = (text: string) => PARAS.filter((p) => text.includes(p)).length;

describe('defect: the article deleted before Readability sees it (noise boxes by class or id)', () => {
  test('class="entry-content no-share" gives the same article as class="entry-content"', () => {
    const plain = extractHtml(page('class="entry-content"'));
    const noShare = extractHtml(page('class="entry-content no-share"'));
    expect(passages(plain.text)).toBe(PARAS.length);
    expect(noShare.text).toBe(plain.text);
    expect(noShare.text).not.toContain('harbour society');
  });

  test.each([
    ['id="sharing-section-2"'],
    ['class="content-with-sidebar-wrp"'],
    ['class="TestReport__Section TestReport__Section--Ads"'],
    ['class="post has-sidebar"'],
  ])('a container %s keeps its article', (attrs) => {
    const out = extractHtml(page(attrs));
    expect(passages(out.text)).toBe(PARAS.length);
    expect(out.text).not.toContain('harbour society');
  });

  test('real share, ad and cookie boxes inside the article still go', () => {
    const html = page('class="entry-content"')
      .replace('<h1>', '<div class="ad-slot">Advertisement</div><div id="cookie-banner">We use cookies. <a href="/c">Settings</a></div><h1>');
    const out = extractHtml(html);
    expect(passages(out.text)).toBe(PARAS.length);
    for (const noise of ['Share on X', 'Advertisement', 'We use cookies']) expect(out.text).not.toContain(noise);
  });
});

describe('defect: a charset declared late in the document decoded as UTF-8', () => {
  const latePage = (charsetMeta: string) => Buffer.concat([
    Buffer.from(`<!doctype html><html><head><!-- ${'build info '.repeat(500)} -->\n<style>${'.a{color:red}\n'.repeat(400)}</style>\n`, 'latin1'),
    Buffer.from(`${charsetMeta}<title>`, 'latin1'), Buffer.from('Crème brûlée \x93recette\x94', 'latin1'),
    Buffer.from('</title></head><body><p>', 'latin1'), Buffer.from('Une crème brûlée à la française, façon grand-mère.', 'latin1'), Buffer.from('</p></body></html>', 'latin1'),
  ]);

  test.each([
    ['<meta charset="windows-1252">'],
    ['<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">'],
    ['<meta content=\'text/html; charset=latin1\' http-equiv=content-type>'],
  ])('%s past 9 KB is found and used', (meta) => {
    const body = latePage(meta);
    expect(body.indexOf('<meta')).toBeGreaterThan(8000);
    const out = extractContent({ body, contentType: 'text/html' });
    expect(out.text).toContain('Une crème brûlée à la française, façon grand-mère.');
    expect(out.text).not.toContain('\ufffd');
  });

  test('prescan follows WHATWG: a <meta> in a comment or an attribute value does not count, a content charset needs http-equiv', () => {
    expect(prescanCharset(Buffer.from('<!-- <meta charset="koi8-r"> --><meta charset="iso-8859-2">'))).toBe('iso-8859-2');
    expect(prescanCharset(Buffer.from('<div title="<meta charset=koi8-r>"></div><meta charset=windows-1251>'))).toBe('windows-1251');
    expect(prescanCharset(Buffer.from('<meta content="text/html; charset=koi8-r"><meta charset=utf-8>'))).toBe('utf-8');
    expect(prescanCharset(Buffer.from('<meta charset="utf-16le">'))).toBe('utf-8');
    expect(prescanCharset(Buffer.from('<meta charset="no-such-thing">'))).toBeUndefined();
  });

  test('an undeclared legacy page that is not UTF-8 is detected, not decoded as UTF-8 with replacement characters', () => {
    const body = Buffer.concat([Buffer.from('<html><body><p>'), Buffer.from('Déjà vu: les élèves étaient très fâchés, à cause de la réforme.', 'latin1'), Buffer.from('</p></body></html>')]);
    expect(extractContent({ body, contentType: 'text/html' }).text).toBe('Déjà vu: les élèves étaient très fâchés, à cause de la réforme.');
  });
});

describe('defect: titles as a reader names the page', () => {
  const doc = (head: string, h1 = 'Reading tide tables') => `<!doctype html><html><head>${head}</head><body>
<header><a href="/">Coastal Notes</a> <nav><a href="/tides">Tides</a></nav></header>
<main><article><h1>${h1}</h1>${body}</article></main>${FOOTER}</body></html>`;

  test.each([
    ['the site name after a dash is split off', '<title>Reading tide tables – Coastal Notes</title>', 'Reading tide tables'],
    ['the site name before a bar, named by og:site_name', '<title>Coastal Notes | Reading tide tables</title><meta property="og:site_name" content="Coastal Notes">', 'Reading tide tables'],
    ['a generic <title> ("Home") loses to the article\'s <h1>', '<title>Home</title>', 'Reading tide tables'],
    ['a <title> that is only the site name loses to the <h1>', '<title>Coastal Notes</title><meta property="og:site_name" content="Coastal Notes">', 'Reading tide tables'],
    ['og:title, with the site name split off', '<title>Home</title><meta property="og:title" content="Reading tide tables | Coastal Notes"><meta property="og:site_name" content="Coastal Notes">', 'Reading tide tables'],
    ['a JSON-LD headline (in @graph)', '<title>Coastal Notes</title><script type="application/ld+json">{"@context":"https://schema.org","@graph":[{"@type":"WebSite","name":"Coastal Notes"},{"@type":"NewsArticle","headline":"Reading tide tables"}]}</script>', 'Reading tide tables'],
  ])('%s', (_what, head, expected) => {
    expect(extractHtml(doc(head), 'https://coastal-notes.example/tides/reading').title).toBe(expected);
  });

  test('a title with a colon is not cut short', () => {
    const html = doc('<title>Tides: a guide for small boats</title>', 'Tides: a guide for small boats');
    expect(extractHtml(html).title).toBe('Tides: a guide for small boats');
    const noH1 = `<html><head><title>Tides: a guide for small boats</title></head><body><div>${body}</div></body></html>`;
    expect(extractHtml(noH1).title).toBe('Tides: a guide for small boats');
  });

  test('the <h1> that is a site logo in the page header is not the title', () => {
    const html = `<html><head><title>Reading tide tables - Coastal Notes</title></head><body><header><h1>Coastal Notes</h1></header><main><article><h2>Reading tide tables</h2>${body}</article></main></body></html>`;
    expect(extractHtml(html).title).toBe('Reading tide tables');
  });
});

describe('defect: a body outside the DOM text (noscript, client-side templates)', () => {
  test.each([
    ['<noscript>', (inner: string) => `<noscript>${inner}</noscript>`],
    ['<script type="text/template">', (inner: string) => `<script type="text/template" id="post-body">${inner}</script>`],
    ['<script type="text/x-handlebars-template">', (inner: string) => `<script type="text/x-handlebars-template">${inner}</script>`],
  ])('a post whose body is only in %s comes back with it', (_what, wrap) => {
    const html = `<!doctype html><html><head><title>Reading tide tables</title></head><body>
<div id="app"><p>Loading…</p></div>${wrap(`<article><h1>Reading tide tables</h1>${body}</article>`)}
<script>document.getElementById('app').innerHTML = document.getElementById('post-body')?.innerHTML ?? '';</script></body></html>`;
    const out = extractHtml(html);
    expect(passages(out.text)).toBe(PARAS.length);
    expect(out.text).not.toContain('innerHTML');
  });
});
