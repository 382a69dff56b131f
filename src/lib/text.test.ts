import { describe, expect, test } from 'vitest';
import { NOT_BLANK_PATTERN, isBlank, storableText, trimBlank } from './text';

describe('blank text', () => {
  test('whitespace trim() keeps (NEL) and control characters are blank; any other character is not', () => {
    for (const s of ['', ' ', '\u0085', '\u3000\u00a0\t\n', '\u0001\u0085 ', '\u2028\u2029']) expect(isBlank(s), JSON.stringify(s)).toBe(true);
    for (const s of ['a', ' x ', '\u0085.\u0085', '😀', '\u200b']) expect(isBlank(s), JSON.stringify(s)).toBe(false);
  });
  test('trimBlank strips both ends only', () => {
    expect(trimBlank('\u0085 red  apple\u3000\t')).toBe('red  apple');
    expect(trimBlank('\u0085\u0085')).toBe('');
  });
});

describe('storable text', () => {
  test('NUL is dropped, a lone surrogate becomes U+FFFD, a pair (an emoji) is kept', () => {
    expect(storableText('a\u0000b')).toBe('ab');
    expect(storableText('c\ud800d\udc00e')).toBe('c\ufffdd\ufffde');
    expect(storableText('ok 😀')).toBe('ok 😀');
  });
});

test('NOT_BLANK_PATTERN (for JSON Schema documents) agrees with isBlank', () => {
  const notBlank = new RegExp(NOT_BLANK_PATTERN);
  for (const s of ['', ' ', '\u0085', '\u3000\u00a0\t\n', '\u0001\u0085 ', '\u2028\u2029', 'a', ' x ', '\u0085.\u0085', '😀', '\u200b']) {
    expect(notBlank.test(s), JSON.stringify(s)).toBe(!isBlank(s));
  }
});

/** What storableText does, by the regular expression alone (its native fast path must agree). */
const reference = (s: string) => s.replace(/\u0000|\p{Cs}/gu, (c) => (c === '\u0000' ? '' : '\ufffd'));

describe('storableText: the native scans for a clean text agree with the regular expression', () => {
  test('NULs dropped and lone surrogates replaced; clean text returned as it is', () => {
    expect(storableText('before\u0000after')).toBe('beforeafter');
    expect(storableText('a\ud800b')).toBe('a\ufffdb');
    expect(storableText('a\udc00b')).toBe('a\ufffdb');
    expect(storableText('end\ud83d')).toBe('end\ufffd');
    expect(storableText('\ude00start')).toBe('\ufffdstart');
    expect(storableText('pair 😀 kept, 中文, café')).toBe('pair 😀 kept, 中文, café');
    const clean = 'plain text '.repeat(1000);
    expect(storableText(clean)).toBe(clean);
    expect(storableText('')).toBe('');
  });

  test('the same answer as the regular expression on random strings of NULs, surrogates and other characters', () => {
    const alphabet = ['a', 'é', '中', '\u0000', '\ud800', '\udbff', '\udc00', '\udfff', '😀', '\n', ' ', '\ufffd'];
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % n;
    };
    for (let i = 0; i < 5_000; i++) {
      let s = '';
      for (let j = rand(24); j > 0; j--) s += alphabet[rand(alphabet.length)];
      expect(storableText(s)).toBe(reference(s));
    }
  });
});
