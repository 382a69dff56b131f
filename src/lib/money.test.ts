import { describe, expect, test } from 'vitest';
import { credits, formatUsd, MoneyError, parseUsd, toCentsHalfUp } from './money';

describe('money', () => {
  test('formats with exactly four decimals', () => {
    expect(formatUsd(0)).toBe('0.0000');
    expect(formatUsd(1)).toBe('0.0001');
    expect(formatUsd(12345)).toBe('1.2345');
    expect(formatUsd(5000)).toBe('0.5000');
    expect(formatUsd(-5)).toBe('-0.0005');
    expect(formatUsd(credits(1))).toBe('0.0100');
    expect(formatUsd(9_007_199_254_740_991)).toBe('900719925474.0991');
  });
  test('parses decimal strings exactly (no float drift)', () => {
    expect(parseUsd('0.015')).toBe(150);
    expect(parseUsd('0.012')).toBe(120);
    expect(parseUsd('1')).toBe(10_000);
    expect(parseUsd('0.1')).toBe(1000);
    expect(parseUsd('-2.5')).toBe(-25_000);
    // 0.1 + 0.2 in floats is 0.30000000000000004; in units it is exact.
    expect(formatUsd(parseUsd('0.1') + parseUsd('0.2'))).toBe('0.3000');
    for (const bad of ['', 'abc', '1.23456', '1e3', '.5']) expect(() => parseUsd(bad)).toThrow(MoneyError);
  });
  test('round trip for every value 0..20000', () => {
    for (let u = 0; u <= 20_000; u++) expect(parseUsd(formatUsd(u))).toBe(u);
  });
  test('cents round half up; floats and fractions refused', () => {
    expect(toCentsHalfUp(95_095)).toBe(951);
    expect(toCentsHalfUp(95_049)).toBe(950);
    expect(toCentsHalfUp(95_050)).toBe(951);
    expect(() => credits(1.5)).toThrow(MoneyError);
    expect(() => formatUsd(0.5)).toThrow(MoneyError);
  });
});
