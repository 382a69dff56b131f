import { createHash } from 'node:crypto';
import { expect, test } from 'vitest';
import { hmacHex, safeEqual, sha256hex } from './hash';

test('sha256hex is the SHA-256 of strings (UTF-8) and buffers, in lower-case hex', () => {
  expect(sha256hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  expect(sha256hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  const text = 'svc_ключ_✓';
  expect(sha256hex(text)).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));
  expect(sha256hex(Buffer.from([0, 255, 16]))).toBe(createHash('sha256').update(Buffer.from([0, 255, 16])).digest('hex'));
});

test('hmacHex and safeEqual', () => {
  expect(hmacHex('key', 'The quick brown fox jumps over the lazy dog')).toBe('f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8');
  expect(safeEqual('abc', 'abc')).toBe(true);
  expect(safeEqual('abc', 'abd')).toBe(false);
  expect(safeEqual('abc', 'abcd')).toBe(false);
});
