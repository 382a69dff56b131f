/**
 * Adding credit: grants (may expire), purchases (never expire). Exactly once per `ref` (payment
 * intent id, referral id...): the check and the append happen under the agent's account lock, and
 * the ledger's unique `ref` is the backstop.
 */
import type { Clock } from '../../lib/clock';
import type { Units } from '../../lib/money';
import { addLot, balanceOf, ledgerBalance, type Balance } from './ledger-store';
import type { BillingStore } from './store';

export interface GrantInput {
  kind: 'grant' | 'purchase';
  units: Units;
  /** Grants only; purchases never expire. */
  expiresAt?: number | null;
  ref: string;
}

export function createCredits(deps: {
  store: BillingStore;
  clock: Clock;
  /** Called after a purchase lands, with the new lifetime total, so the agent's tier can follow it. */
  onPurchase?: (agentId: string, lifetimePurchaseUnits: number) => Promise<void>;
}) {
  const { store, clock } = deps;
  return {
    /** Adds credit once per ref; returns whether it was added now and the balance after. */
    async add(agentId: string, g: GrantInput): Promise<{ added: boolean; balance: Balance }> {
      if (!Number.isSafeInteger(g.units) || g.units <= 0) throw new Error('credit to add must be a positive integer of units');
      const now = clock.now();
      const result = await store.withLocks([agentId], now, async (trx, accounts) => {
        const account = accounts.get(agentId)!;
        const added = await addLot(trx, {
          agentId, kind: g.kind, units: g.units, ref: g.ref, now, expiresAt: g.kind === 'purchase' ? null : g.expiresAt ?? null,
        });
        const balance = await balanceOf(trx, agentId, now);
        if (added) {
          const patch: Parameters<BillingStore['updateAccount']>[2] = {};
          if (g.kind === 'purchase') patch.lifetime_purchase_units = account.lifetime_purchase_units + g.units;
          // Credit back above the threshold ends the dip: the next dip may refill again.
          if (account.topup_dip_open === 1 && balance.units >= account.auto_topup_threshold_units) patch.topup_dip_open = 0;
          if (Object.keys(patch).length) await store.updateAccount(trx, agentId, patch, now);
        }
        return { added, balance, lifetime: account.lifetime_purchase_units + (added && g.kind === 'purchase' ? g.units : 0) };
      });
      if (result.added && g.kind === 'purchase' && deps.onPurchase) await deps.onPurchase(agentId, result.lifetime);
      return { added: result.added, balance: result.balance };
    },

    balance(agentId: string): Promise<Balance> {
      return balanceOf(store.db, agentId, clock.now());
    },

    /** The balance recomputed from the append-only ledger alone. */
    ledgerBalance(agentId: string): Promise<Units> {
      return ledgerBalance(store.db, agentId, clock.now());
    },
  };
}

export type Credits = ReturnType<typeof createCredits>;
