/** Tables of the blobs area (times are epoch milliseconds; booleans 0/1). */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface BlobsTables {}
