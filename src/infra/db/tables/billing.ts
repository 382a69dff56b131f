/** Tables of the billing area (times are epoch milliseconds; booleans 0/1). */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface BillingTables {}
