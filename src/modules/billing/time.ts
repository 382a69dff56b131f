/** UTC calendar helpers for metering (days as YYYY-MM-DD text, which sorts like the dates). */
import { DAY_MS } from '../../lib/utc';

export { DAY_MS, utcDay, utcMonthStartDay as monthStartDay } from '../../lib/utc';

/** Whole UTC calendar days from a to b (b later). */
export const utcDaysBetween = (a: number, b: number): number => Math.floor(b / DAY_MS) - Math.floor(a / DAY_MS);
