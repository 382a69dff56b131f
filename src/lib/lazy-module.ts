/**
 * A CommonJS package loaded on first use instead of at start-up. For the large client libraries a
 * host needs only when a setting names them (ioredis with REDIS_URL, pg with a PostgreSQL
 * DATABASE_URL): loading them at import time cost every host start-up time and resident memory.
 * Types come from a type-only import at the call site; the value is loaded here, once.
 */
import { createRequire } from 'node:module';

const requireHere = createRequire(import.meta.url);

export function lazyModule<T>(name: string, init?: (m: T) => void): () => T {
  let loaded: T | undefined;
  return () => {
    if (loaded === undefined) {
      loaded = requireHere(name) as T;
      init?.(loaded);
    }
    return loaded;
  };
}
