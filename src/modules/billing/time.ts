/** UTC calendar helpers for metering beyond src/lib/utc.ts (days as YYYY-MM-DD text, which sorts like the dates). */
import { DAY_MS } from '../../lib/utc';

/** Whole UTC calendar days from a to b (b later). */
export const utcDaysBetween = (a: number, b: number): number => Math.floor(b / DAY_MS) - Math.floor(a / DAY_MS);
