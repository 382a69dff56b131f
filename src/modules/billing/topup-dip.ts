/**
 * Auto top-up's trigger: when a paid charge takes the balance under the agent's threshold, the
 * charge's own transaction marks the dip on the locked account, so exactly one charge of any
 * instance opens it and the refill (service.ts) is asked for once, after that commit is on disk.
 */
import type { Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import { parseUsd } from '../../lib/money';
import type { LockedAccount } from './account';
import type { Decided, Job } from './meter-core';
import type { BillingStore } from './store';
import type { LowBalance } from './metering-contract';

/** Whether `d` could open an auto-top-up dip at all (a paid charge, auto-top-up on, no dip open). */
export const mayDip = (account: LockedAccount, d: Decided) => d.charge.costUnits > 0 && account.auto_topup_enabled === 1 && account.topup_dip_open === 0;

/**
 * After a charge under the lock: when it took the balance under the auto-top-up threshold, mark the
 * dip. Returns the event to fire after commit.
 */
export async function markDip(store: BillingStore, trx: Transaction<Database>, job: Job, account: LockedAccount, d: Decided): Promise<LowBalance | undefined> {
  if (!mayDip(account, d)) return undefined;
  const units = parseUsd(d.usage.credits_remaining_usd);
  if (units >= account.auto_topup_threshold_units) return undefined;
  await store.updateAccount(trx, job.agentId, { topup_dip_open: 1 }, job.now);
  account.topup_dip_open = 1;
  return { agentId: job.agentId, account: { ...account }, balanceUnits: units, chargeId: job.chargeId };
}
