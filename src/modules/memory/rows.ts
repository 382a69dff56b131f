/** Row shapes shared by the memory store and its read cache (the store imports the cache, never the reverse). */

export interface EntryRow {
  key: string;
  version: number;
  value: string;
  size_bytes: number;
  importance: string;
  source: string | null;
  confidence: number;
  derived_start: number | null;
  derived_end: number | null;
  expires_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface Counters {
  writes: number;
  searches: number;
  /** Bytes of latest values that are live and unexpired at `now`. */
  storageBytes: number;
}
