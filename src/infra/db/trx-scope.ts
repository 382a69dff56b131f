/**
 * Per-transaction state for work that a write batcher runs for many callers in one transaction.
 *
 * A caller running inside a scope may remember what this transaction already holds (an account row
 * it locked) and put off writes that every caller would otherwise repeat (one counter update for the
 * batch instead of one per caller). The batcher that owns the transaction opens the scope, ends it
 * before it commits or releases a caller's savepoint (the put-off writes run then, inside the
 * transaction) and discards it after a rollback, whole or to a savepoint (what was remembered no
 * longer holds). In a transaction without a scope, `scopeOf` gives undefined and callers write at once.
 */
import type { Transaction } from 'kysely';
import type { Database } from './schema';

export interface ScopeSlot<T> {
  /** Runs the writes that were put off, inside the transaction, before it commits. */
  end(trx: Transaction<Database>, value: T): Promise<void>;
  /** After a rollback: forget what was derived from the rolled-back work. */
  discard(value: T): void;
}

export interface TrxScope {
  get<T>(slot: ScopeSlot<T>): T | undefined;
  set<T>(slot: ScopeSlot<T>, value: T): void;
}

/** What callers kept in one transaction's scope, by slot. */
class Scope implements TrxScope {
  readonly values = new Map<ScopeSlot<any>, unknown>();
  get<T>(slot: ScopeSlot<T>): T | undefined {
    return this.values.get(slot) as T | undefined;
  }
  set<T>(slot: ScopeSlot<T>, value: T): void {
    this.values.set(slot, value);
  }
}

const scopes = new WeakMap<object, Scope>();

/** The scope of `trx`, if its owner opened one. */
export function scopeOf(trx: Transaction<Database>): TrxScope | undefined {
  return scopes.get(trx);
}

/**
 * Runs `fn` inside a scope on `trx`: ends the scope when `fn` succeeds (its put-off writes run in
 * `trx`) and discards it when `fn` or those writes throw; the error is passed on. Nested calls on the
 * same transaction (one per savepoint) each end or discard what was kept since the last one.
 */
export async function withScope<T>(trx: Transaction<Database>, fn: () => Promise<T>): Promise<T> {
  let scope = scopes.get(trx);
  if (!scope) scopes.set(trx, (scope = new Scope()));
  const { values } = scope;
  let kept: [ScopeSlot<any>, unknown][] = [];
  try {
    const out = await fn();
    kept = [...values];
    values.clear();
    for (const [slot, value] of kept) await slot.end(trx, value);
    return out;
  } catch (e) {
    for (const [slot, value] of [...kept, ...values]) slot.discard(value);
    values.clear();
    throw e;
  }
}
