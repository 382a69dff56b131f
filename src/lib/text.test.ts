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
