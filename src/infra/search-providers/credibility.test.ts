import { describe, expect, test } from 'vitest';
import { DEFAULT_NEWS_DOMAINS } from '../../config/search';
import { credibilityScore, scoreResults, sourceOf } from './credibility';

const news = DEFAULT_NEWS_DOMAINS;

describe('credibilityScore', () => {
  test.each([
    // government
    ['nasa.gov', 1.0], ['www.cdc.gov', 1.0], ['data.gov.uk', 1.0], ['www.gov.uk', 1.0], ['health.gov.au', 1.0],
    ['www.gouv.fr', 1.0], ['impots.gouv.fr', 1.0], ['www.gob.mx', 1.0], ['NASA.GOV.', 1.0],
    // education
    ['mit.edu', 0.9], ['web.mit.edu', 0.9], ['www.ox.ac.uk', 0.9], ['www.u-tokyo.ac.jp', 0.9], ['unimelb.edu.au', 0.9],
    // major news, subdomains included; news beats .org
    ['reuters.com', 0.8], ['www.reuters.com', 0.8], ['edition.cnn.com', 0.8], ['www.bbc.co.uk', 0.8], ['npr.org', 0.8],
    ['abcnews.go.com', 0.8], ['a.b.c.reuters.com', 0.8], ['REUTERS.COM.', 0.8],
    // org
    ['en.wikipedia.org', 0.7], ['www.eff.org', 0.7],
    // everything else, including look-alikes
    ['example.com', 0.5], ['gov.example.com', 0.5], ['edu.example.com', 0.5], ['notreuters.com', 0.5], ['reuters.com.evil.net', 0.5],
    ['example.org.uk', 0.5], ['go.com', 0.5], ['gov', 0.5], ['', 0.5], ['127.0.0.1', 0.5], ['mygov.uk', 0.5], ['example.gov.cn.evil.com', 0.5],
  ])('%s → %s', (host, score) => {
    expect(credibilityScore(host, news)).toBe(score);
  });

  test('the news list is configurable and normalised', () => {
    expect(credibilityScore('blog.example.com', ['WWW.Example.com'])).toBe(0.8);
    expect(credibilityScore('reuters.com', [])).toBe(0.5);
    const list = [' News.Example.org. ', '', 'co.example'];
    expect(credibilityScore('news.example.org', list)).toBe(0.8);
    expect(credibilityScore('x.news.example.org', list)).toBe(0.8);
    expect(credibilityScore('fakenews.example.org', list)).toBe(0.7);
    expect(credibilityScore('example.org', list)).toBe(0.7);
    expect(credibilityScore('a.co.example', list)).toBe(0.8);
    expect(credibilityScore('co.example.net', list)).toBe(0.5);
  });
});

describe('source and scoreResults', () => {
  test('source is the lower-cased host without one leading www.', () => {
    expect(sourceOf('https://WWW.Example.COM:8443/a?b')).toBe('example.com');
    expect(sourceOf('https://www.www.example.com/')).toBe('www.example.com');
    expect(sourceOf('http://bücher.example/')).toBe('xn--bcher-kva.example');
    expect(sourceOf('https://nasa.gov../x')).toBe('nasa.gov'); // every trailing dot
    expect(sourceOf('nonsense')).toBe('');
  });

  test('adds source and credibility_score to each hit, keeping order', () => {
    const out = scoreResults([
      { title: 'a', url: 'https://www.nih.gov/x', snippet: '', published_date: null },
      { title: 'b', url: 'https://www.nytimes.com/y', snippet: 's', published_date: '2024-01-01T00:00:00.000Z' },
    ], news);
    expect(out).toEqual([
      { title: 'a', url: 'https://www.nih.gov/x', snippet: '', published_date: null, source: 'nih.gov', credibility_score: 1.0 },
      { title: 'b', url: 'https://www.nytimes.com/y', snippet: 's', published_date: '2024-01-01T00:00:00.000Z', source: 'nytimes.com', credibility_score: 0.8 },
    ]);
    expect(Object.keys(out[0]!)).toEqual(['title', 'url', 'snippet', 'source', 'credibility_score', 'published_date']);
  });
});

describe('scoreResults on a cached answer', () => {
  test('the same results array is scored once; each call gets its own array of the same frozen hits', () => {
    const results = [{ title: 'T', url: 'https://www.nasa.gov/x', snippet: 's', published_date: null }];
    const a = scoreResults(results, news);
    const b = scoreResults(results, news);
    expect(a).not.toBe(b);
    expect(a[0]).toBe(b[0]);
    expect(a[0]).toMatchObject({ source: 'nasa.gov', credibility_score: 1.0 });
    expect(Object.isFrozen(a[0])).toBe(true);
    // Another news list is scored afresh.
    expect(scoreResults([{ title: 'T', url: 'https://blog.example.com/', snippet: 's', published_date: null }], ['example.com'])[0].credibility_score).toBe(0.8);
    const again = [{ title: 'T', url: 'https://blog.example.com/', snippet: 's', published_date: null }];
    expect(scoreResults(again, [])[0].credibility_score).toBe(0.5);
    expect(scoreResults(again, ['example.com'])[0].credibility_score).toBe(0.8);
  });
});
