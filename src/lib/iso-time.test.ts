import { expect, test } from 'vitest';
import { parseIsoDate, parseIsoInstant } from './iso-time';

test('dates: real calendar days only', () => {
  expect(parseIsoDate('2026-11-01')).toBe(Date.UTC(2026, 10, 1));
  expect(parseIsoDate('2028-02-29')).toBe(Date.UTC(2028, 1, 29));
  for (const bad of ['2026-02-30', '2026-02-29', '2026-13-01', '2026-11-1', '2026-11-01T00:00:00Z', ' 2026-11-01', '']) expect(parseIsoDate(bad), bad).toBeUndefined();
});

test('date-times: a zone is required, the day must exist in the zone written', () => {
  expect(parseIsoInstant('2026-11-26T09:30:00Z')).toBe(Date.UTC(2026, 10, 26, 9, 30));
  expect(parseIsoInstant('2026-11-26T09:30Z')).toBe(Date.UTC(2026, 10, 26, 9, 30));
  expect(parseIsoInstant('2026-11-26T09:30:00.123+01:00')).toBe(Date.UTC(2026, 10, 26, 8, 30, 0, 123));
  expect(parseIsoInstant('2026-03-01T00:30:00+01:00')).toBe(Date.UTC(2026, 1, 28, 23, 30)); // a real day in its zone
  expect(parseIsoInstant('2026-02-28T23:30:00-05:00')).toBe(Date.UTC(2026, 2, 1, 4, 30));
  for (const bad of ['2026-02-30T09:30:00Z', '2026-02-30T23:30:00-05:00', '2026-11-26T09:30:00', '2026-11-26', '2026-11-26T25:00:00Z',
    '2026-11-26T09:60:00Z', '2026-11-26t09:30:00z', 'yesterday']) expect(parseIsoInstant(bad), bad).toBeUndefined();
});
