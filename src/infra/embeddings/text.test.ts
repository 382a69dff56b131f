import { describe, expect, test } from 'vitest';
import { EMBED_TEXT_MAX_CHARS, splitName, textForEmbedding } from './index';

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
