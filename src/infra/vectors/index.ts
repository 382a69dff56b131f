/**
 * Vector index shared by memory, commons and blob search: owner-scoped nearest neighbours with the
 * model id stored per vector. Resident codes in this process on SQLite, pgvector (HNSW, cosine) on
 * PostgreSQL when the extension can be created, and an exact in-process scan otherwise. See
 * docs/memory.md.
 */
import type { DatabaseHandle } from '../db/database';
import type { Clock } from '../../lib/clock';
import { AcceleratedVectorIndex } from './accelerated';
import { PgvectorAccelerator, tryCreatePgvector } from './pgvector';
import { ResidentAccelerator } from './resident';
import type { VectorIndex } from './types';

export * from './types';
export { createVectorIndexer, type VectorIndexer, type TextSource } from './indexer';
export { loadVectorExtension } from './sqlite-vec';

export interface VectorIndexOptions {
  /** 'auto' uses the engine's accelerator; 'exact' forces the scan (tests, benchmarks). */
  mode?: 'auto' | 'exact';
  /** SQLite: memory for resident codes (SVC_VECTOR_RESIDENT_MB), default 256 MiB. */
  residentBytes?: number;
  onFallback?: (why: string) => void;
}

export async function createVectorIndex(database: DatabaseHandle, clock: Clock, opts: VectorIndexOptions = {}): Promise<VectorIndex> {
  if (opts.mode === 'exact') return new AcceleratedVectorIndex(database.db, clock);
  if (database.engine === 'sqlite' && database.sqlite) {
    return new AcceleratedVectorIndex(database.db, clock, new ResidentAccelerator(database.sqlite, opts.residentBytes ?? 256 * 2 ** 20));
  }
  if (await tryCreatePgvector(database.db)) {
    return new AcceleratedVectorIndex(database.db, clock, await PgvectorAccelerator.open(database.db));
  }
  opts.onFallback?.('pgvector is not installed on this PostgreSQL server; searching by exact scan');
  return new AcceleratedVectorIndex(database.db, clock);
}
