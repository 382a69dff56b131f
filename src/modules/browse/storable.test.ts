import { describe, expect, test } from 'vitest';
import { storableText } from '../../lib/text';
import { storable } from './storable';

describe('storable: the browse log\'s text, as storableText makes it', () => {
  test('NULs dropped and lone surrogates replaced; clean text returned as it is', () => {
    expect(storable('before\u0000after')).toBe('beforeafter');
    expect(storable('a\ud800b')).toBe('a\ufffdb');
    expect(storable('a\udc00b')).toBe('a\ufffdb');
    expect(storable('end\ud83d')).toBe('end\ufffd');
    expect(storable('\ude00start')).toBe('\ufffdstart');
    expect(storable('pair 😀 kept, 中文, café')).toBe('pair 😀 kept, 中文, café');
    const clean = 'plain text '.repeat(1000);
    expect(storable(clean)).toBe(clean);
    expect(storable('')).toBe('');
  });

  test('the same answer as storableText on random strings of NULs, surrogates and other characters', () => {
    const alphabet = ['a', 'é', '中', '\u0000', '\ud800', '\udbff', '\udc00', '\udfff', '😀', '\n', ' ', '\ufffd'];
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % n;
    };
    for (let i = 0; i < 5_000; i++) {
      let s = '';
      for (let j = rand(24); j > 0; j--) s += alphabet[rand(alphabet.length)];
      expect(storable(s)).toBe(storableText(s));
    }
  });
});
