import { describe, expect, test } from 'vitest';
import { badField, scanJson } from './input-guard';

const mayOverflow = (text: string) => scanJson(text, 1000).bigNumber;
const nestsDeeper = (text: string, max: number) => scanJson(text, max).tooDeep;

describe('scanJson: numbers that may parse to Infinity (the cheap pre-check before walking a parsed body)', () => {
  test('flags every text that can parse to an infinite number', () => {
    for (const t of ['1e309', '-1E999', '2e+400', `${'9'.repeat(309)}`, '{"a":[0,1.5e308]}']) expect(mayOverflow(t), t).toBe(true);
    // Any number that parses to Infinity has a 3+ digit exponent or 309+ digits: checked by parsing.
    for (const t of ['1e309', '-1e999', '9'.repeat(309) + '.5']) expect(Number.isFinite(JSON.parse(t)), t).toBe(false);
  });

  test('passes ordinary JSON without a walk', () => {
    for (const t of ['{"a":1,"b":-2.5,"c":1e5,"d":"e123","e":1e-300}', '[1E+99]', '"text with e999 in it"', `"${'9'.repeat(400)}"`, '9'.repeat(308)]) expect(mayOverflow(t), t).toBe(false);
  });

  test('is linear on digit-heavy text (no backtracking)', () => {
    const hostile = `[${`${'1'.repeat(308)},`.repeat(3000)}1]`; // ~0.9 MB of 308-digit numbers
    const t0 = performance.now();
    expect(mayOverflow(hostile)).toBe(false);
    expect(performance.now() - t0).toBeLessThan(1000); // linear: a few ms; backtracking: minutes
  });
});

describe('badField', () => {
  test('names the top-level field holding a non-finite number or a NUL, at any depth', () => {
    expect(badField({ a: 1, b: { c: [1, Infinity] } })).toEqual({ field: 'b', problem: 'number' });
    expect(badField({ a: 'ok', b: ['x\u0000'] })).toEqual({ field: 'b', problem: 'nul' });
    expect(badField(-Infinity)).toEqual({ field: '', problem: 'number' });
    expect(badField({ a: 1, b: 'fine', c: [null, true, 1e308] })).toBeUndefined();
  });

  test('NUL is allowed where the caller says the field is arbitrary JSON; numbers never are', () => {
    expect(badField({ value: { s: '\u0000' } }, (f) => f !== 'value')).toBeUndefined();
    expect(badField({ value: { n: NaN } }, (f) => f !== 'value')).toEqual({ field: 'value', problem: 'number' });
  });

  test('a lone surrogate is a problem of text (exempt like NUL in arbitrary JSON); a pair is not', () => {
    expect(badField({ a: ['x\udc00'] })).toEqual({ field: 'a', problem: 'surrogate' });
    expect(badField({ a: '\ud800' })).toEqual({ field: 'a', problem: 'surrogate' });
    expect(badField({ a: 'ok \ud83d\ude00' })).toBeUndefined();
    expect(badField({ value: '\ud800' }, (f) => f !== 'value')).toBeUndefined();
  });

  test('a deeply nested document does not overflow the stack', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(badField({ deep })).toBeUndefined();
  });
});

describe('scanJson: nesting depth', () => {
  const nested = (d: number) => `${'['.repeat(d)}1${']'.repeat(d)}`;
  test('counts arrays and objects, exactly at the limit', () => {
    expect(nestsDeeper(nested(1000), 1000)).toBe(false);
    expect(nestsDeeper(nested(1001), 1000)).toBe(true);
    expect(nestsDeeper(`{"a":${nested(999)}}`, 1000)).toBe(false);
    expect(nestsDeeper(`{"a":${'{"b":'.repeat(1000)}1${'}'.repeat(1000)}}`, 1000)).toBe(true);
  });

  test('brackets inside strings, escaped quotes included, do not count', () => {
    const text = JSON.stringify({ s: '['.repeat(5000), t: '\\"[[[[' + '{'.repeat(3000) });
    expect(nestsDeeper(text, 10)).toBe(false);
    expect(nestsDeeper(`[${text},${nested(11)}]`, 10)).toBe(true);
  });
});
