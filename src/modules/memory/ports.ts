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

/** Semantic side of memory (semantic.ts): vectors kept in step with the ledger through an outbox. */
export interface MemorySemantic {
  /** Why search cannot run (no embedder, no vector index), or undefined when it can. */
  unavailableReason(): string | undefined;
  /** In the writer's transaction: this key needs a (new) vector. */
  enqueue(trx: Trx, agentId: string, key: string): Promise<void>;
  /** In the writer's transaction: these keys have no live value any more. */
  forget(trx: Trx, agentId: string, keys: string[]): Promise<void>;
  /**
   * Prepares a search: finishes the agent's pending writes (read-your-writes) and embeds the query,
   * once; the function answers the `k` nearest keys of this agent, nearest first, as often as asked
   * (the service asks for more when some of the first are no longer live).
   */
  nearest(agentId: string, query: string): Promise<(k: number) => Promise<{ key: string; similarity: number }[]>>;
}
