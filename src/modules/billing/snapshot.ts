/**
 * GET /v1/billing: the billing snapshot, built from the ledger, the metering counters
 * and (through optional ports) the storage figures of the memory and blob modules.
 * For credit-metered tiers the *_limit fields give the rolling 30-day free floor and *_remaining
 * what is left of it; for legacy monthly tiers they give the UTC-month quota.
 */
import { iso, type Clock } from '../../lib/clock';
import { formatUsd, parseUsd } from '../../lib/money';
import { effectiveTier } from '../../lib/tiers';
import { stakeAccount } from './account';
import { balanceOf } from './ledger-store';
import { countDays, freeUsed, lifetimeCount } from './meter-store';
import { ACTION_PRICE, FLOOR_WINDOW_MS, FREE_FLOORS } from './pricing';
import type { BillingStore } from './store';
import { utcDay, utcMonthStartDay } from '../../lib/utc';

/** Storage figures owned by other modules; zero until they are wired. */
export interface StorageUsagePort {
  memoryStorageBytes(agentId: string): Promise<number>;
  blobStorageBytes(agentId: string): Promise<number>;
  blobEmbedStorageBytes(agentId: string): Promise<number>;
}

export async function billingSnapshot(deps: {
  store: BillingStore; clock: Clock; storage?: StorageUsagePort; processor: string | null;
}, agentId: string, storedTier: string) {
  const { store, clock } = deps;
  const now = clock.now();
  const month = utcMonthStartDay(now);
  const today = utcDay(now);
  const db = store.db;
  const account = await store.getAccount(agentId);
  const tier = effectiveTier(storedTier, account?.lifetime_purchase_units ?? 0);
  const [bal, staked, search, memory, browse, parse, parseLifetime, searchFree, memFree, mem, blob, embed] = await Promise.all([
    balanceOf(db, agentId, now),
    balanceOf(db, stakeAccount(agentId), now),
    countDays(db, agentId, 'search', month, today),
    countDays(db, agentId, 'memory_write', month, today),
    countDays(db, agentId, 'browse', month, today),
    countDays(db, agentId, 'parse', month, today),
    lifetimeCount(db, agentId, 'parse'),
    freeUsed(db, agentId, 'search', FREE_FLOORS.search!, now, FLOOR_WINDOW_MS),
    freeUsed(db, agentId, 'memory_write', FREE_FLOORS.memory_write!, now, FLOOR_WINDOW_MS),
    deps.storage?.memoryStorageBytes(agentId) ?? 0,
    deps.storage?.blobStorageBytes(agentId) ?? 0,
    deps.storage?.blobEmbedStorageBytes(agentId) ?? 0,
  ]);
  const monthly = tier.metering === 'monthly';
  const searchLimit = monthly ? tier.searchPerMonth : FREE_FLOORS.search!;
  const searchRemaining = monthly ? Math.max(0, (tier.searchPerMonth ?? 0) - search) : FREE_FLOORS.search! - searchFree;
  const memoryLimit = monthly ? tier.memoryWritesPerMonth : FREE_FLOORS.memory_write!;
  const overageUsd = monthly ? tier.searchOverageUsdPerCall : formatUsd(ACTION_PRICE.search);
  const combined = mem + embed;
  const overLimit = combined >= tier.memoryStorageBytes || blob >= tier.blobStorageBytes || parse >= tier.parseOpsPerMonth
    // The monthly write cap binds every tier that has one (memory answers 429 MEMORY_OPS_LIMIT at it), credit-metered too.
    || (tier.memoryWritesPerMonth !== null && memory >= tier.memoryWritesPerMonth);
  return {
    status: 'success' as const,
    tier: tier.name,
    credits_remaining_usd: formatUsd(bal.units),
    // Beyond the contract's fields: credit at stake (locked or cooling), never part of the spendable balance.
    credits_staked_usd: formatUsd(staked.units),
    credits_expire_at: bal.earliestExpiry === null ? null : iso(bal.earliestExpiry),
    tier_label: tier.label,
    auto_topup: account?.auto_topup_enabled === 1,
    over_limit: overLimit,
    calls_total: search,
    call_limit: searchLimit,
    payment_customer_id: account?.payment_customer_id ?? null,
    payment_processor: deps.processor,
    recharge_consent_id: account?.recharge_consent_id ?? null,
    search_calls_this_month: search,
    search_calls_limit: searchLimit,
    search_calls_remaining: searchRemaining,
    search_overage_rate_per_call: overageUsd === null ? null : formatUsd(parseUsd(overageUsd)),
    memory_ops_this_month: memory,
    memory_ops_limit: memoryLimit,
    memory_storage_bytes: mem,
    blob_embed_storage_bytes: embed,
    combined_memory_storage_bytes: combined,
    memory_storage_limit_bytes: tier.memoryStorageBytes,
    blob_storage_bytes: blob,
    blob_storage_limit_bytes: tier.blobStorageBytes,
    browse_calls_this_month: browse,
    parse_ops_this_month: parse,
    parse_ops_lifetime: parseLifetime,
    // Beyond the contract's fields: how the limits above are counted, and the refill settings.
    quota_period: monthly ? 'utc_month' as const : 'rolling_30_days' as const,
    memory_writes_free_remaining: monthly ? null : FREE_FLOORS.memory_write! - memFree,
    auto_topup_threshold_usd: account?.auto_topup_enabled ? formatUsd(account.auto_topup_threshold_units) : null,
    auto_topup_credits: account?.auto_topup_enabled ? account.auto_topup_units / 100 : null,
  };
}
