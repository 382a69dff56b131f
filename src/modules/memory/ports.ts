import type { Trx } from './store';

/**
 * Metering port, implemented by billing (wired in app.ts). Called inside each PUT's own transaction,
 * after the caps re-check and before the rows are written, so the charge commits with the write or
 * not at all (a refused or failed write is never paid for, and nothing needs refunding). Throws
 * ApiError to refuse (402 INSUFFICIENT_CREDITS), which rolls this write back.
 */
export interface MemoryMeter {
  chargeWrite(trx: Trx, agentId: string, tier: string): Promise<{
    /** After the commit: billing's `_svc.usage` of this charge (credits remaining, tier label, ...). */
    committed(): Promise<object | undefined>;
  }>;
}

/** Search side of memory (semantic.ts): a lexical index written with each write, vectors kept in step through an outbox. */
export interface MemorySemantic {
  /** Why search cannot run (no embedder, no vector index), or undefined when it can. */
  unavailableReason(): string | undefined;
  /** In the writer's transaction: indexes the key's words and queues its vector, when its text is not the one already indexed. */
  indexWrite(trx: Trx, agentId: string, key: string, value: unknown, opts?: { wordsOnly?: boolean }): Promise<void>;
  /** In the writer's transaction: these keys have no live value any more. */
  forget(trx: Trx, agentId: string, keys: string[]): Promise<void>;
  /**
   * Prepares a search (never waiting on the embedding backlog): embeds the query and the agent's few
   * newest pending items within a small budget. `pending`: the agent's items not yet searchable by
   * meaning (found by words all the same). `ranked(k)` answers the `k` best keys, best first, as
   * often as asked (the service asks for more when some of the first are no longer live).
   */
  nearest(agentId: string, query: string): Promise<{ pending: number; ranked(k: number): Promise<{ key: string; similarity: number }[]> }>;
}
