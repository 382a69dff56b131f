import type { Trx } from './store';

/**
 * Metering port, implemented by billing (wired in app.ts). Called on each PUT after validation and
 * limits; throws ApiError 402 INSUFFICIENT_CREDITS when billing refuses. The returned handle's
 * refund() is called if the write then fails, so an agent never pays for a write that did not happen.
 */
export interface MemoryMeter {
  /** `usage` is billing's `_svc.usage` after this charge (credits remaining, tier label, ...). */
  chargeWrite(agentId: string): Promise<{ refund(): Promise<void>; usage?: Record<string, unknown> }>;
}

/** Semantic side of memory (semantic.ts): vectors kept in step with the ledger through an outbox. */
export interface MemorySemantic {
  /** Why search cannot run (no embedder, no vector index), or undefined when it can. */
  unavailableReason(): string | undefined;
  /** In the writer's transaction: this key needs a (new) vector. */
  enqueue(trx: Trx, agentId: string, key: string): Promise<void>;
  /** In the writer's transaction: these keys have no live value any more. */
  forget(trx: Trx, agentId: string, keys: string[]): Promise<void>;
  /** Nearest live keys of this agent; finishes the agent's pending writes first (read-your-writes). */
  search(agentId: string, query: string, limit: number): Promise<{ key: string; similarity: number }[]>;
}
