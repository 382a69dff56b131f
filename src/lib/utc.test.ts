import { expect, test } from 'vitest';
import { utcDay, utcMonth, utcMonthStartDay } from './utc';

test('utcMonth: exact at both edges of a month, whatever order the calls come in', () => {
  const start = Date.UTC(2026, 10, 1); // 2026-11-01T00:00:00.000Z
  expect(utcMonth(start)).toBe('2026-11');
  expect(utcMonth(start - 1)).toBe('2026-10');
  expect(utcMonth(start + 5)).toBe('2026-11');
  const next = Date.UTC(2026, 11, 1);
  expect(utcMonth(next - 1)).toBe('2026-11');
  expect(utcMonth(next)).toBe('2026-12');
  expect(utcMonth(Date.UTC(2027, 0, 1) - 1)).toBe('2026-12');
  expect(utcMonth(Date.UTC(2027, 0, 1))).toBe('2027-01');
  expect(utcMonth(Date.UTC(2024, 1, 29, 23, 59, 59, 999))).toBe('2024-02');
  expect(utcMonthStartDay(Date.UTC(2024, 1, 29, 23, 59, 59, 999))).toBe('2024-02-01');
});

test('utcDay: exact at both edges of a day', () => {
  const d = Date.UTC(2026, 10, 22);
  expect(utcDay(d)).toBe('2026-11-22');
  expect(utcDay(d - 1)).toBe('2026-11-21');
  expect(utcDay(d + 86_400_000 - 1)).toBe('2026-11-22');
  expect(utcDay(d + 86_400_000)).toBe('2026-11-23');
  expect(utcDay(d)).toBe('2026-11-22');
  expect(utcDay(0)).toBe('1970-01-01');
  expect(utcDay(-1)).toBe('1969-12-31');
});

test('both agree with Date formatting on random instants', () => {
  for (let i = 0; i < 500; i++) {
    const ms = Date.UTC(1990, 0, 1) + Math.floor(Math.random() * 60 * 365 * 86_400_000);
    const iso = new Date(ms).toISOString();
    expect(utcDay(ms)).toBe(iso.slice(0, 10));
    expect(utcMonth(ms)).toBe(iso.slice(0, 7));
  }
});
