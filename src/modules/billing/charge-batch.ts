/**
 * `charge()`'s transactions: calls that arrive while one is being written go together in the next
 * (group commit, batcher.ts), the agents' account locks taken in agent-id order, the charges decided
 * one by one. The batch is a transaction scope like a memory write batch (trx-scope.ts): each
 * agent's charges share its locked account and state, and their lot draws and day counts are
 * written once, when the scope ends. A paid charge may also take a credit lease (leases.ts).
 */
import type { Transaction } from 'kysely';
import { ApiError } from '../../http/errors';
import type { Database } from '../../infra/db/schema';
import { scopeOf, withScope, type ScopeSlot } from '../../infra/db/trx-scope';
import type { LockedAccount } from './account';
import { createBatcher, type Outcome } from './batcher';
import { decide } from './decide';
import { holdAccount, type Held } from './held-account';
import type { Decided, Job, MeterCore } from './meter-core';
import type { MeterSql } from './meter-sql';
import type { MeterStates } from './meter-state';
import type { LowBalance } from './metering-contract';
import { markDip } from './topup-dip';

/** Where a transaction scope keeps the accounts its charges hold; its end writes what they put off. */
export function createHeldSlot(m: MeterSql, states: MeterStates): ScopeSlot<Map<string, Held>> {
  return {
    async end(trx, held) {
      for (const h of held.values()) {
        for (const [lot, units] of h.takes) await m.takeLot(trx, lot, units);
        if (h.rows) for (const r of h.rows.values()) await m.spendRow(trx, { agentId: h.account.agent_id, ...r });
        for (const b of h.bumps.values()) await m.bumpDaily(trx, h.account.agent_id, b.pool, b.day, b.n);
      }
    },
    // Rolled back: the stamps would already send the next charge to the database; drop the copies anyway.
    discard(held) {
      for (const agentId of held.keys()) states.drop(agentId);
    },
  };
}

/** The group-committed queue of `charge()`'s jobs. */
export function createChargeBatch(core: MeterCore) {
  return createBatcher<Job, Decided>((jobs) => runBatch(core, jobs), { durable: core.deps.store.durable });
}

/** One batch: one transaction under the agents' locks; the refill of a dip it opened is asked for once it is on disk. */
async function runBatch(core: MeterCore, jobs: Job[]): Promise<Outcome<Decided>[]> {
  const { store, clock } = core.deps;
  const low: LowBalance[] = [];
  const out = await store.withLocks(jobs.map((j) => j.agentId), clock.now(),
    (trx, accounts) => withScope(trx, () => decideAll(core, trx, jobs, accounts, low)), { deferFlush: true });
  if (low.length > 0) store.durable().then(() => { for (const l of low) core.deps.onLowBalance?.(l); }, () => {});
  return out;
}

/** Decides the batch's jobs in order, each agent's on its held account; a refusal answers only its job. */
async function decideAll(core: MeterCore, trx: Transaction<Database>, jobs: Job[], accounts: Map<string, LockedAccount>,
  low: LowBalance[]): Promise<Outcome<Decided>[]> {
  const results: Outcome<Decided>[] = [];
  const held = new Map<string, Held>();
  scopeOf(trx)!.set(core.heldSlot, held);
  for (const job of jobs) {
    const account = accounts.get(job.agentId)!;
    let h = held.get(job.agentId);
    // Each charge of billing's own batch keeps its own spend rows: a refund gives them back.
    if (!h) held.set(job.agentId, (h = holdAccount(account, false)));
    try {
      const d = (await decide(core, trx, job, account, false, h))!;
      results.push({ ok: true, value: d });
      const dip = await markDip(core.deps.store, trx, job, account, d);
      if (dip) low.push(dip);
      else if (core.leases && !d.charge.free) {
        job.lease = await core.leases.consider(trx, { agentId: job.agentId, action: job.action, storedTier: job.tier, now: job.now }, account, h.state!, d.charge, d.figures);
      }
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      results.push({ ok: false, error: e });
    }
  }
  return results;
}
