/** Money formatting of the usage views. */
import { formatUsd } from '../../lib/money';

/** Units of 0.0001 USD as a 4-decimal USD string ("0.0200"); fractions of a unit are dropped. */
export const formatUnitsUsd = (units: number): string => formatUsd(Math.trunc(units));
