import { describe, expect, test } from 'vitest';
import { isUuid, newOrderedId } from './ids';

describe('newOrderedId', () => {
  test('is a version-7 UUID whose text order follows time', () => {
    const a = newOrderedId(1_700_000_000_000);
    const b = newOrderedId(1_700_000_000_001);
    expect(isUuid(a)).toBe(true);
    expect(a[14]).toBe('7');
    expect('89ab').toContain(a[19]);
    expect(a < b).toBe(true);
    expect(a.slice(0, 13).replace('-', '')).toBe((1_700_000_000_000).toString(16).padStart(12, '0'));
  });
  test('ids of the same millisecond differ', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newOrderedId(5)));
    expect(ids.size).toBe(1000);
  });
});
