import { describe, expect, test } from 'vitest';
import { chunkRows, chunkText } from './chunk';
import { prose } from '../../../test/fixtures/documents';

/** Paragraphs of known sizes: sentences of ~80 characters, `n` per paragraph. */
function paragraphs(count: number, sentencesEach: number): string {
  return Array.from({ length: count }, (_, p) =>
    Array.from({ length: sentencesEach }, (_, s) => `Paragraph ${p} sentence ${s} talks about ${prose(p * 31 + s, 8)}.`).join(' '),
  ).join('\n\n');
}

describe('chunkText', () => {
  test('empty and blank text give no chunks', () => {
    expect(chunkText('')).toEqual([]);
    expect(chunkText(' \n\n \t')).toEqual([]);
  });

  test('short text is one chunk, trimmed, with exact offsets', () => {
    const text = '  Hello there.\n\nSecond paragraph.  ';
    const [only, ...rest] = chunkText(text);
    expect(rest).toEqual([]);
    expect(only!.text).toBe('Hello there.\n\nSecond paragraph.');
    expect(text.slice(only!.start, only!.end)).toBe(only!.text);
  });

  test('long prose: chunks stay within bounds, cut at sentence or paragraph ends, cover everything', () => {
    const text = paragraphs(40, 6);
    const chunks = chunkText(text);
    expect(chunks.length).toBeGreaterThan(10);
    for (const [i, c] of chunks.entries()) {
      expect(c.text.length).toBeLessThanOrEqual(1200);
      if (i < chunks.length - 1) expect(c.text.length).toBeGreaterThanOrEqual(600);
      expect(text.slice(c.start, c.end)).toBe(c.text);
      expect(c.text).toMatch(/\.$/); // ends at a sentence boundary
      expect(c.text).toMatch(/^Paragraph \d+ sentence \d+/); // starts at one
    }
    // Nothing lost: the chunks, in order, contain every word of the text.
    const words = (s: string) => s.split(/\s+/).filter(Boolean);
    expect(chunks.flatMap((c) => words(c.text))).toEqual(words(text));
  });

  test('prefers a paragraph boundary once the chunk is past minChars', () => {
    // Paragraphs of ~500 characters: two fit, and the cut falls between paragraphs.
    const text = paragraphs(6, 6);
    const sizes = text.split('\n\n').map((p) => p.length);
    expect(sizes[0]).toBeGreaterThan(400);
    const chunks = chunkText(text, { minChars: 800, targetChars: 1000, maxChars: 1200 });
    for (const c of chunks) {
      const next = text.slice(c.end, c.end + 2);
      expect(next === '\n\n' || c.end === text.length).toBe(true);
    }
  });

  test('a sentence longer than maxChars is cut between words; a giant word is cut hard', () => {
    const longSentence = Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ');
    const giant = 'x'.repeat(3000);
    const text = `${longSentence}\n\n${giant}`;
    const chunks = chunkText(text, { maxChars: 500 });
    for (const c of chunks) {
      expect(c.text.length).toBeLessThanOrEqual(500);
      expect(text.slice(c.start, c.end)).toBe(c.text);
    }
    const wordChunks = chunks.filter((c) => c.text.startsWith('word'));
    for (const c of wordChunks) expect(c.text).toMatch(/^word\d+( word\d+)*$/); // no word split
    expect(chunks.filter((c) => c.text.startsWith('x')).map((c) => c.text.length)).toEqual([500, 500, 500, 500, 500, 500]);
  });

  test('a short tail joins the previous chunk when it fits', () => {
    const text = `${'A sentence of filler words here. '.repeat(30).trim()}\n\nTail.`;
    const chunks = chunkText(text);
    expect(chunks.at(-1)!.text.endsWith('Tail.')).toBe(true);
    expect(chunks.every((c) => c.text !== 'Tail.')).toBe(true);
  });

  test('options are honoured', () => {
    const text = paragraphs(10, 6);
    for (const c of chunkText(text, { targetChars: 300, minChars: 200, maxChars: 400 })) expect(c.text.length).toBeLessThanOrEqual(400);
  });
});

describe('chunkRows', () => {
  const rows = Array.from({ length: 200 }, (_, i) => [`item ${i}`, `${i * 3}`, `note about item ${i}`]);

  test('every chunk starts with the context lines and stays within maxChars', () => {
    const chunks = chunkRows(rows, ['Sheet: Stock', 'name | qty | note']);
    expect(chunks.length).toBeGreaterThan(5);
    for (const c of chunks) {
      expect(c.text.startsWith('Sheet: Stock\nname | qty | note\n')).toBe(true);
      expect(c.text.length).toBeLessThanOrEqual(1200);
    }
  });

  test('row ranges are contiguous and cover every row once', () => {
    const chunks = chunkRows(rows, ['h']);
    expect(chunks[0]!.first).toBe(0);
    expect(chunks.at(-1)!.last).toBe(199);
    for (let i = 1; i < chunks.length; i++) expect(chunks[i]!.first).toBe(chunks[i - 1]!.last + 1);
    const lines = chunks.flatMap((c) => c.text.split('\n').slice(1));
    expect(lines).toEqual(rows.map((r) => r.join(' | ')));
  });

  test('a row longer than a chunk is split into pieces of its own', () => {
    const chunks = chunkRows([['short'], ['y '.repeat(2000).trim()], ['after']], ['head']);
    const giant = chunks.filter((c) => c.first === 1);
    expect(giant.length).toBeGreaterThan(1);
    for (const c of chunks) expect(c.text.length).toBeLessThanOrEqual(1200);
    expect(chunks.map((c) => [c.first, c.last])).toEqual([[0, 0], ...giant.map(() => [1, 1]), [2, 2]]);
  });

  test('empty rows are skipped', () => {
    expect(chunkRows([[''], ['', ''], ['a', 'b']])).toEqual([{ text: 'a | b', first: 2, last: 2 }]);
  });
});
