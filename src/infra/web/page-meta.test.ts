/**
 * Page metadata (byline, publication date, language, site name) from pages written here, and
 * formulas and captions in the main text.
 */
import { describe, expect, test } from 'vitest';
import { extractHtml } from './extract';
import { normalizeDate, normalizeLanguage } from './page-meta';

const PROSE = [
  'The lighthouse keeper climbed the spiral stair twice a night to trim the wick and wind the clockwork that turned the great lens.',
  'Supplies came by boat once a fortnight in summer, and in winter the keepers often went six weeks without fresh bread or letters from the mainland.',
  'When the light was automated in 1987 the last keeper stayed on for a month to show the engineers where the damp got into the lamp room.',
].map((p) => `<p>${p}</p>`).join('\n');

const page = (head: string, article = '', htmlAttrs = '') =>
  `<!doctype html><html ${htmlAttrs}><head>${head}</head><body><nav><a href="/">Home</a></nav><article>${article}${PROSE}</article><footer>© Coast Press</footer></body></html>`;

describe('page metadata', () => {
  test('JSON-LD: author names, datePublished, inLanguage, publisher', () => {
    const ld = { '@context': 'https://schema.org', '@graph': [
      { '@type': 'WebSite', name: 'Coast Press Online' },
      { '@type': ['NewsArticle'], headline: 'The last keeper', author: [{ '@type': 'Person', name: 'Mara Quinn' }, { '@type': 'Person', name: 'Ted Oyelaran' }],
        datePublished: '2021-07-14T06:00:00Z', inLanguage: 'en-gb', publisher: { '@type': 'Organization', name: 'Coast Press' } },
    ] };
    const out = extractHtml(page(`<title>The last keeper</title><script type="application/ld+json">${JSON.stringify(ld)}</script>`), 'https://coast.example/keeper');
    expect(out.meta).toEqual({ byline: 'Mara Quinn, Ted Oyelaran', published_at: '2021-07-14T06:00:00Z', language: 'en-GB', site_name: 'Coast Press' });
  });

  test('meta tags and <html lang>: author, article:published_time, og:site_name', () => {
    const out = extractHtml(page('<title>Le dernier gardien</title><meta name="author" content="Par Odile Fabre"><meta property="article:published_time" content="2022-02-03"><meta property="og:site_name" content="Presse du Littoral">', '', 'lang="FR-ca"'));
    expect(out.meta).toEqual({ byline: 'Odile Fabre', published_at: '2022-02-03', language: 'fr-CA', site_name: 'Presse du Littoral' });
  });

  test('marked-up byline and <time>, and the byline line kept out of the text', () => {
    const out = extractHtml(page('<title>Der letzte Wärter</title>', '<h1>Der letzte Wärter</h1><div class="article-meta">Von <a rel="author" href="/a/jb">Jonas Becker</a> · <time datetime="2020-11-09T17:45+01:00">9. November 2020</time></div>', 'lang="de"'));
    expect(out.meta).toMatchObject({ byline: 'Jonas Becker', published_at: '2020-11-09T17:45:00+01:00', language: 'de', site_name: null });
    expect(out.text).not.toContain('Jonas Becker');
    expect(out.text).not.toMatch(/^Der letzte Wärter/);
    expect(out.text).toMatch(/^The lighthouse keeper climbed/);
  });

  test('a page that states nothing has nulls; a URL as author is no byline', () => {
    const out = extractHtml(page('<title>Untitled keeper notes</title><meta name="author" content="https://social.example/@keeper">'));
    expect(out.meta).toEqual({ byline: null, published_at: null, language: null, site_name: null });
  });

  test.each([
    ['2024-03-05', '2024-03-05'], ['2024-03-05T08:30:00+0100', '2024-03-05T08:30:00+01:00'], ['2024-03-05 08:30', '2024-03-05T08:30:00'],
    ['March 5, 2024', '2024-03-05'], ['5 March 2024', '2024-03-05'], ['5. März 2024', '2024-03-05'], ['le 5 mars 2024', '2024-03-05'],
    ['5 de marzo de 2024', '2024-03-05'], ['05.03.2024', '2024-03-05'], ['2024年3月5日', '2024-03-05'], ['2024/03/05', '2024-03-05'],
    ['31/12/2023', '2023-12-31'], ['5 maja 2024', '2024-05-05'], ['2024-02-30', null], ['yesterday', null], ['03/04/2024', null],
  ])('date %s -> %s', (raw, iso) => {
    expect(normalizeDate(raw)).toBe(iso);
  });

  test.each([['en', 'en'], ['EN_us', 'en-US'], ['zh-hant-tw', 'zh-Hant-TW'], ['pt-BR, en', 'pt-BR'], ['und', null], ['english', null], ['', null]])('language %s -> %s', (raw, tag) => {
    expect(normalizeLanguage(raw)).toBe(tag);
  });
});

describe('formulas and captions in the main text', () => {
  const mathml = '<math><mi>x</mi><mo>=</mo><mfrac><mrow><mo>−</mo><mi>b</mi><mo>±</mo><msqrt><msup><mi>b</mi><mn>2</mn></msup><mo>−</mo><mn>4</mn><mi>a</mi><mi>c</mi></msqrt></mrow><mrow><mn>2</mn><mi>a</mi></mrow></mfrac></math>';

  test('MathML is written out as a linear formula, not dropped', () => {
    const out = extractHtml(page('<title>Roots</title>', `<p>The roots of a quadratic are ${mathml} for any real coefficients.</p>`));
    expect(out.text).toContain('The roots of a quadratic are x = (−b ± √(b^2 − 4ac))/(2a) for any real coefficients.');
  });

  test('semantics: the presentation, not the TeX annotation; block formulas on their own line; alttext as a last resort', () => {
    const sem = '<math display="block"><semantics><mrow><msub><mi>a</mi><mi>n</mi></msub><mo>=</mo><msup><mn>2</mn><mi>n</mi></msup></mrow><annotation encoding="application/x-tex">a_n = 2^n</annotation></semantics></math>';
    const out = extractHtml(page('<title>Sequences</title>', `<p>The sequence is given by${sem}and it grows fast.</p><p>Also <math alttext="E=mc^2"></math> appears.</p>`));
    expect(out.text).toContain('The sequence is given by\na_n = 2^n\nand it grows fast.');
    expect(out.text).toContain('Also E=mc^2 appears.');
    expect(out.text).not.toContain('a_n = 2^n a_n');
  });

  test('a formula drawn as an image keeps its TeX; MathJax sources become text', () => {
    const out = extractHtml(page('<title>Squares</title>', '<p>Its area is <img class="mwe-math-fallback-image-inline" alt="{\\displaystyle s^{2}}" src="/m.svg"> square units, and <script type="math/tex">P = 4s</script> is the perimeter.</p>'));
    expect(out.text).toContain('Its area is s^{2} square units, and P = 4s is the perimeter.');
  });

  test('figure captions, caption classes, alt text and image file names are not main text', () => {
    const out = extractHtml(page('<title>Lens</title>', `<figure><img src="/lens.jpg" alt="The Fresnel lens in its brass frame"><figcaption>The first-order Fresnel lens, photographed in 1979.</figcaption></figure>
<div class="wp-caption"><img src="/IMG_2041.JPG" alt="IMG_2041.JPG"><p class="wp-caption-text">The lamp room after the storm. Photo: A. Keeper</p></div>
<p><a href="/IMG_2042.jpg">IMG_2042.jpg</a></p>`));
    expect(out.text).toContain('The lighthouse keeper climbed the spiral stair');
    for (const gone of ['Fresnel lens', 'brass frame', 'lamp room after the storm', 'IMG_2041', 'IMG_2042']) expect(out.text).not.toContain(gone);
  });
});

describe('text and title rules found on the article corpus', () => {
  test('byline, date and forum-profile lines leave the text; a sentence with a date stays; a "By" line names the byline', () => {
    const out = extractHtml(page('<title>Keeper notes</title>', `<div class="x-head">By Nora Pike</div><div class="x-when">Posted March 18, 2024</div>
<p>The station closed on 5 March 2024 after a storm</p><div>Posts: 41</div><div>Joined: Tue Oct 03, 2023</div>`));
    expect(out.meta.byline).toBe('Nora Pike');
    expect(out.text).toContain('The station closed on 5 March 2024 after a storm');
    for (const gone of ['By Nora Pike', 'Posted March 18', 'Posts: 41', 'Joined:']) expect(out.text).not.toContain(gone);
  });

  test('a MediaWiki page: infobox, contents, edit links, hatnote and references are not the article', () => {
    const out = extractHtml(`<!doctype html><html><head><title>Lighthouse - Wikipedia</title><meta property="og:title" content="Lighthouse - Wikipedia"></head><body>
<main><h1>Lighthouse</h1><div id="mw-content-text"><div class="mw-parser-output"><div class="hatnote">For the novel, see Lighthouse (novel).</div>
<table class="infobox"><tr><th>Type</th><td>Navigational aid tower</td></tr></table>${PROSE}<div id="toc" class="toc"><h2>Contents</h2><ul><li>1 History</li></ul></div>
<h2>History<span class="mw-editsection">[edit]</span></h2>${PROSE}<div class="reflist"><ol class="references"><li>^ Stevenson, Alan (1850). A Rudimentary Treatise.</li></ol></div></div></div></main></body></html>`);
    expect(out.title).toBe('Lighthouse');
    expect(out.text).toContain('The lighthouse keeper climbed the spiral stair');
    for (const gone of ['For the novel', 'Navigational aid tower', 'Contents', '[edit]', 'Rudimentary Treatise']) expect(out.text).not.toContain(gone);
  });

  test('a short Chinese article is taken whole by Readability, not as the whole page', () => {
    const zh = ['三年前，我辞掉了在上海的工作，回到普洱的老家，承包了十五亩山地种咖啡。', '第一年几乎没有收成，只能靠在山下帮人采茶维持生活。', '今年终于迎来了第一次像样的采收，我们只挑完全成熟的红色果实。'];
    const out = extractHtml(`<!doctype html><html lang="zh-CN"><head><title>种咖啡的第三年 - 山野笔记</title></head><body><div id="header"><a href="/">山野笔记</a> <a href="/archive">归档</a> <a href="/tags">标签</a></div>
<div id="post"><h2>种咖啡的第三年</h2><div class="post-body">${zh.map((p) => `<p>${p}</p>`).join('')}</div></div><div id="footer">© 2024 山野笔记 · 滇ICP备12345678号</div></body></html>`);
    expect(out.method).toBe('readability');
    for (const p of zh) expect(out.text).toContain(p);
    expect(out.text).not.toContain('滇ICP备');
  });

  test('a section label in the <title> is not the name; an inline "related" box is not the text', () => {
    const out = extractHtml(page('<title>Press Release - Harbour Trust Buys the Old Light</title>', `<div class="related-box"><a href="/r">Related: Harbour Trust annual report</a></div>`));
    expect(out.title).toBe('Harbour Trust Buys the Old Light');
    expect(out.text).not.toContain('annual report');
  });
});

test('log and code lines with dates stay in the text (a <pre> is never a date line)', () => {
  const out = extractHtml(page('<title>Server log</title>', `<pre>2024-03-05 12:00:01 INFO server started
2024-03-05 12:00:02 WARN cache cold
Mon Mar 04 2024 build 812 ok</pre><p>Posts: the server writes one line per event</p>`));
  expect(out.text).toContain('2024-03-05 12:00:01 INFO server started');
  expect(out.text).toContain('2024-03-05 12:00:02 WARN cache cold');
});

test('with no site metadata, the site name is the other part of a "Headline | Site" <title>; a section label is none', () => {
  const named = extractHtml(page('<title>The last keeper | Coast Notes</title>', '<h1>The last keeper</h1>'));
  expect(named.meta.site_name).toBe('Coast Notes');
  const label = extractHtml(page('<title>News | The last keeper</title>', '<h1>The last keeper</h1>'));
  expect(label.meta.site_name).toBeNull();
  const stated = extractHtml(page('<title>The last keeper | Coast Notes</title><meta property="og:site_name" content="Coast Notes Online">', '<h1>The last keeper</h1>'));
  expect(stated.meta.site_name).toBe('Coast Notes Online');
});
