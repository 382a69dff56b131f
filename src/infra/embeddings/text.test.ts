import { describe, expect, test } from 'vitest';
import { EMBED_TEXT_MAX_CHARS, MAX_CHUNKS, sentenceWindows, splitName, textForEmbedding } from './index';

describe('textForEmbedding', () => {
  test('key words split on . : - _ and camelCase, then name: value pairs', () => {
    expect(textForEmbedding('user.prefs:editor_theme', { editor: 'vim', fontSize: 14, tabs: false }))
      .toBe('user prefs editor theme. editor: vim; font size: 14; tabs: false');
    expect(splitName('project-svc.dbURL/v2')).toBe('project svc db url v2');
    expect(splitName('HTTPServerConfig')).toBe('http server config');
  });

  test('a string value is used as written', () => {
    expect(textForEmbedding('note', 'Ship  the\nAPI  on Friday')).toBe('note. Ship the API on Friday');
  });

  test('arrays, nesting, numbers; null and empty values are left out', () => {
    expect(textForEmbedding('meeting:2026-01-05', {
      attendees: ['Ana', 'Bo'], notes: { decision: 'ship v2', blockers: null }, scores: [1, [2.5, 3]], empty: {},
    })).toBe('meeting 2026 01 05. attendees: Ana, Bo; notes: decision: ship v2; blockers; scores: 1, 2.5, 3; empty');
    expect(textForEmbedding('flag', null)).toBe('flag');
    expect(textForEmbedding('n', 42)).toBe('n. 42');
  });

  test('bounded: long values are cut near the limit, on a word', () => {
    const long = textForEmbedding('doc', { body: 'lorem ipsum '.repeat(2000), more: 'x'.repeat(5000) });
    expect(long.length).toBeLessThanOrEqual(EMBED_TEXT_MAX_CHARS);
    expect(long.length).toBeGreaterThan(EMBED_TEXT_MAX_CHARS * 0.8);
    expect(long.endsWith('lorem') || long.endsWith('ipsum')).toBe(true);
    expect(textForEmbedding('k', 'word '.repeat(100), 50).length).toBeLessThanOrEqual(50);
    // A huge array stops being walked once the budget is spent.
    const many = Array.from({ length: 200_000 }, (_, i) => `item${i}`);
    const started = performance.now();
    expect(textForEmbedding('list', many).length).toBeLessThanOrEqual(EMBED_TEXT_MAX_CHARS);
    expect(performance.now() - started).toBeLessThan(200);
  });

  test('deep nesting is bounded too', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 1000; i++) deep = { level: deep };
    const text = textForEmbedding('deep', deep);
    expect(text).not.toContain('bottom');
    expect(text.length).toBeLessThanOrEqual(EMBED_TEXT_MAX_CHARS);
  });

  test('deterministic', () => {
    const v = { b: [1, 'two'], a: { c: true } };
    expect(textForEmbedding('x.y', v)).toBe(textForEmbedding('x.y', JSON.parse(JSON.stringify(v))));
  });
});

describe('sentenceWindows', () => {
  test('whole sentences and lines packed up to the word limit, no overlap, nothing lost', () => {
    const text = 'The backup of billing failed. Disk full on db-12.\nkey | value\nuser.prefs:editor | editor: Neovim\nShort.';
    const windows = sentenceWindows(text, 8);
    expect(windows).toEqual(['The backup of billing failed.', 'Disk full on db-12. key | value', 'user.prefs:editor | editor: Neovim Short.']);
    for (const w of windows) expect(w.split(' ').length).toBeLessThanOrEqual(8);
    expect(windows.join(' ').split(' ')).toEqual(text.split(/\s+/));
  });

  test('a sentence longer than the limit is cut into overlapping windows; a short text is itself', () => {
    const long = Array.from({ length: 25 }, (_, i) => `w${i}`).join(' ');
    const windows = sentenceWindows(long, 10);
    expect(windows.every((w) => w.split(' ').length <= 10)).toBe(true);
    expect(windows[0]).toBe('w0 w1 w2 w3 w4 w5 w6 w7 w8 w9');
    expect(windows[1]!.startsWith('w8 ')).toBe(true);
    expect(windows.at(-1)!.endsWith('w24')).toBe(true);
    expect(sentenceWindows('  one   two ', 10)).toEqual(['one two']);
  });

  test('at most MAX_CHUNKS windows: they grow until the whole text fits', () => {
    const text = Array.from({ length: 60 }, (_, i) => `Row ${i} holds a value.`).join('\n');
    const windows = sentenceWindows(text, 10);
    expect(windows.length).toBeLessThanOrEqual(MAX_CHUNKS);
    expect(windows.join(' ')).toBe(text.replace(/\n/g, ' '));
  });
});
