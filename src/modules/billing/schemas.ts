import { Type } from 'typebox';
import { IsoTime, Nullable } from '../../http/response-schemas';
import { MAX_PURCHASE_CREDITS } from './pricing';

export const CheckoutBody = Type.Object({
  credits: Type.Integer({ minimum: 1, maximum: MAX_PURCHASE_CREDITS, description: 'Whole credits to buy (1 credit = 0.01 USD); at least 50' }),
}, { additionalProperties: false });

export const AutoTopupBody = Type.Object({
  enabled: Type.Boolean(),
  threshold_credits: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_PURCHASE_CREDITS, description: 'Refill when the balance falls under this many credits' })),
  topup_credits: Type.Optional(Type.Integer({ minimum: 50, maximum: MAX_PURCHASE_CREDITS, description: 'Credits bought per refill (slider rate applies)' })),
}, { additionalProperties: false });

export const SetupBody = Type.Optional(Type.Object({}, { additionalProperties: false }));

export const CheckoutValidationCodes = {
  'body.credits': { status: 422, code: 'INVALID_CREDIT_AMOUNT', message: `credits must be a whole number from 50 to ${MAX_PURCHASE_CREDITS}` },
};

// ---- Responses ----

const Usd = (description?: string) => Type.String({ pattern: '^-?\\d+\\.\\d{4}$', ...(description ? { description } : {}) });
const Success = Type.Literal('success');

/** `_svc.usage` of metered responses (metering-contract.ts UsageSnapshot). */
export const UsageSnapshotSchema = Type.Object({
  credits_remaining_usd: Usd('Spendable credit in USD, 4 decimal places'),
  credits_staked_usd: Usd('Credit at stake (locked or cooling): not spendable, not in credits_remaining_usd'),
  tier_label: Type.String(),
  auto_topup: Type.Boolean(),
  credits_expire_at: Nullable(IsoTime('When the earliest expiring credit lot expires')),
  commons_url: Nullable(Type.String()),
  commons_size: Nullable(Type.Integer({ description: 'Entries in the commons' })),
  commons_contributions: Nullable(Type.Integer({ description: "This agent's entries in the commons" })),
  browse_calls_remaining: Nullable(Type.Integer()),
});

/** GET /v1/billing (snapshot.ts). The *_limit fields: the rolling 30-day free floor, or a legacy tier's UTC-month quota. */
export const BillingSnapshotResponse = Type.Object({
  status: Success,
  tier: Type.String(),
  credits_remaining_usd: Usd('4 decimal places'),
  credits_staked_usd: Usd('Credit at stake (locked or cooling), never part of the spendable balance'),
  credits_expire_at: Nullable(IsoTime()),
  tier_label: Type.String(),
  auto_topup: Type.Boolean(),
  over_limit: Type.Boolean({ description: 'True when storage, memory or parse quota is at cap' }),
  calls_total: Type.Integer(),
  call_limit: Nullable(Type.Integer()),
  payment_customer_id: Nullable(Type.String()),
  payment_processor: Nullable(Type.String()),
  recharge_consent_id: Nullable(Type.String()),
  search_calls_this_month: Type.Integer(),
  search_calls_limit: Nullable(Type.Integer()),
  search_calls_remaining: Type.Integer(),
  search_overage_rate_per_call: Nullable(Usd()),
  memory_ops_this_month: Type.Integer(),
  memory_ops_limit: Nullable(Type.Integer({ description: 'null: unlimited' })),
  memory_storage_bytes: Type.Integer({ description: 'Key-value memory only' }),
  blob_embed_storage_bytes: Type.Integer(),
  combined_memory_storage_bytes: Type.Integer({ description: 'memory_storage_bytes + blob_embed_storage_bytes' }),
  memory_storage_limit_bytes: Type.Integer(),
  blob_storage_bytes: Type.Integer(),
  blob_storage_limit_bytes: Type.Integer(),
  browse_calls_this_month: Type.Integer(),
  parse_ops_this_month: Type.Integer(),
  parse_ops_lifetime: Type.Integer(),
  quota_period: Type.Union([Type.Literal('utc_month'), Type.Literal('rolling_30_days')]),
  memory_writes_free_remaining: Nullable(Type.Integer({ description: 'Credit-metered tiers: free writes left in the rolling window; null on legacy tiers' })),
  auto_topup_threshold_usd: Nullable(Usd()),
  auto_topup_credits: Nullable(Type.Integer()),
}, { description: 'The billing snapshot' });

/** GET /v1/billing/config. */
export const BillingConfigResponse = Type.Object({
  status: Success,
  payment_processor: Nullable(Type.String({ description: 'stripe, or null when billing is not configured' })),
  publishable_key: Nullable(Type.String()),
  billing_page_url: Type.String(),
  js_env: Type.Union([Type.Literal('live'), Type.Literal('test'), Type.Literal('unconfigured')]),
  currency: Type.String(),
}, { description: 'Payment processor settings' });

/** POST /v1/billing/credits/checkout. */
export const CheckoutResponse = Type.Object({
  status: Success,
  intent_id: Type.String(),
  client_secret: Nullable(Type.String()),
  billing_page_url: Type.String({ description: 'The billing page with the client secret in its fragment' }),
  currency: Type.String(),
  amount: Type.Integer({ description: 'In the smallest unit of the currency (cents)' }),
  customer_id: Type.String(),
  credits: Type.Integer(),
  unit_rate_usd: Usd(),
  total_usd: Usd(),
}, { description: 'A payment intent to pay on the billing page' });

/** POST /v1/billing/setup. */
export const SetupResponse = Type.Object({
  status: Success,
  setup_intent_id: Type.String(),
  client_secret: Nullable(Type.String()),
  billing_page_url: Type.String(),
  customer_id: Type.String(),
  amount: Type.Integer({ description: 'Always 0: card capture only' }),
  currency: Type.String(),
}, { description: 'A zero-amount setup intent to complete on the billing page' });

/** POST /v1/billing/auto-topup: the configuration now in force (the amounts are null when disabled). */
export const AutoTopupResponse = Type.Object({
  status: Success,
  auto_topup: Type.Boolean(),
  threshold_credits: Nullable(Type.Integer()),
  threshold_usd: Nullable(Usd()),
  topup_credits: Nullable(Type.Integer()),
  topup_total_usd: Nullable(Usd()),
  payment_method_id: Nullable(Type.String()),
  recharge_consent_id: Nullable(Type.String()),
}, { description: 'The auto top-up configuration now in force' });

/** POST /v1/billing/payment-processor/webhook: the event was verified; what applying it did. */
export const WebhookResponse = Type.Object({
  received: Type.Literal(true),
  effect: Type.String({ description: 'e.g. credits_granted, recharge_consent_stored, payment_method_stored, duplicate, ignored...' }),
}, { description: 'The event was verified and applied (or acknowledged with the reason it changed nothing)' });

/** POST /admin/billing/referrals/settle. */
export const ReferralSettleResponse = Type.Object({
  status: Success,
  enabled: Type.Boolean({ description: 'false: payouts are disabled on this host and nothing was decided' }),
  paid: Type.Integer(),
  rejected: Type.Integer(),
  waiting: Type.Integer(),
}, { description: 'Referral payouts decided now' });

/** POST /admin/billing/grants. */
export const GrantResponse = Type.Object({
  status: Success,
  granted: Type.Boolean({ description: 'false: this reference was granted before (nothing added)' }),
  credits_remaining_usd: Usd(),
}, { description: 'The grant, and the balance after it' });

/** A page or asset of the billing page: text, not JSON. */
export const textResponse = (mediaTypes: string[], description: string) => ({
  description,
  content: Object.fromEntries(mediaTypes.map((t) => [t, { schema: Type.String() }])),
});
