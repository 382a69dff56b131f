/**
 * UTC calendar labels: '2026-11-22' and '2026-11'. Every metered or memory request asks for one,
 * and formatting a Date is the dearest part of that, so the label of the last day and month asked
 * for is kept with its bounds and reused while a timestamp falls inside them.
 */
export const DAY_MS = 86_400_000;
let day = { from: 0, to: -1, label: '' };
let month = { from: 0, to: -1, label: '' };

/** 'YYYY-MM-DD' of the UTC day holding `ms`. */
export function utcDay(ms: number): string {
  if (ms >= day.from && ms < day.to) return day.label;
  const from = Math.floor(ms / DAY_MS) * DAY_MS;
  day = { from, to: from + DAY_MS, label: new Date(ms).toISOString().slice(0, 10) };
  return day.label;
}

/** 'YYYY-MM' of the UTC month holding `ms`. */
export function utcMonth(ms: number): string {
  if (ms >= month.from && ms < month.to) return month.label;
  const d = new Date(ms);
  const from = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  month = { from, to: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1), label: d.toISOString().slice(0, 7) };
  return month.label;
}

/** 'YYYY-MM-01': the first day of the UTC month holding `ms`. */
export const utcMonthStartDay = (ms: number): string => `${utcMonth(ms)}-01`;
