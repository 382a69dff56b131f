/** UTC calendar helpers (days as YYYY-MM-DD text, which sorts like the dates). */
import { formatUsd } from '../../lib/money';

export { DAY_MS, utcDay as utcDayOf, utcMonth as utcMonthOf, utcMonthStartDay } from '../../lib/utc';

/** Units of 0.0001 USD as a 4-decimal USD string ("0.0200"); fractions of a unit are dropped. */
export const formatUnitsUsd = (units: number): string => formatUsd(Math.trunc(units));
