import { expect, test } from 'vitest';
import { retryAfterSeconds } from './retry-after';

test('Retry-After: delta-seconds, an HTTP-date from now, anything else undefined', () => {
  const now = Date.UTC(2026, 10, 26, 12, 0, 0);
  expect(retryAfterSeconds('7', now)).toBe(7);
  expect(retryAfterSeconds([' 120 ', '5'], now)).toBe(120);
  expect(retryAfterSeconds('Thu, 26 Nov 2026 12:00:30 GMT', now)).toBe(30);
  expect(retryAfterSeconds('Thu, 26 Nov 2026 11:59:00 GMT', now)).toBe(0); // in the past: now
  for (const v of ['soon', '-1', '1.5', '', undefined, null]) expect(retryAfterSeconds(v, now)).toBeUndefined();
});
