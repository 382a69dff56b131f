/** Tables of the discovery area (times are epoch milliseconds; booleans 0/1). */
export interface DiscoveryTables {}
