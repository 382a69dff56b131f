import { bool, group, int, optionalStr, optionalUrl, str, url } from './define';

/**
 * Billing is "configured" when the three Stripe secrets are set; otherwise checkout answers
 * 503 BILLING_NOT_CONFIGURED with a pricing preview and metering still works on granted credit.
 */
export const billingSettings = group('Billing and metering', {
  meteringEnabled: bool('SVC_METERING_ENABLED', true, 'Charge metered actions (free floors, credits, quotas). false: every metered action is free and billing counts nothing (private self-hosting); the tier\'s storage limits and memory\'s monthly write cap still apply.'),
  meteringLeaseCalls: int('SVC_METERING_LEASE_CALLS', 64, 'Paid calls of one agent and action (search, blob_search) an instance may answer from credit it holds aside, settling them within ~0.1 s instead of a transaction per call (docs/billing.md, Credit leases). 0: every charge is decided and on disk before its answer.', { min: 0, max: 10_000 }),
  meteringHoldSweepSeconds: int('SVC_METERING_HOLD_SWEEP_SECONDS', 60, 'How often an instance deletes credit holds that lapsed more than a minute ago, whichever instance took them (one that died leaves its holds behind); also once at start.', { min: 1, max: 86_400 }),
  stripeSecretKey: optionalStr('STRIPE_SECRET_KEY', 'Stripe secret key (sk_live_... or sk_test_...). Unset: billing is not configured.'),
  stripePublishableKey: optionalStr('STRIPE_PUBLISHABLE_KEY', 'Stripe publishable key (pk_...) handed to the billing page.'),
  stripeWebhookSecret: optionalStr('STRIPE_WEBHOOK_SECRET', 'Signing secret (whsec_...) of the webhook endpoint /v1/billing/payment-processor/webhook.'),
  stripeApiBase: optionalUrl('SVC_STRIPE_API_BASE', 'Stripe API base address. Default: https://api.stripe.com. Tests point it at a loopback fake.'),
  stripeJsUrl: url('SVC_STRIPE_JS_URL', 'https://js.stripe.com/v3/', 'Stripe.js loaded by the billing page (must be served by Stripe in production).'),
  webhookToleranceSeconds: int('SVC_STRIPE_WEBHOOK_TOLERANCE_SECONDS', 300, 'Maximum age of a webhook signature timestamp.', { min: 10, max: 3600 }),
  billingPageUrl: optionalUrl('SVC_BILLING_PAGE_URL', 'Address of the billing page. Default: <base>/billing (served by svc).'),
  referralPayoutsEnabled: bool('SVC_REFERRAL_PAYOUTS_ENABLED', false, 'Pay 0.50 USD of credit to referrers of agents that meet the activity rules (docs/billing.md).'),
  referralMinActions: int('SVC_REFERRAL_MIN_ACTIONS', 3, 'Metered calls a referred agent must make within 7 days of registering for its referrer to be paid.', { min: 1, max: 10_000 }),
  referralCreditExpiryDays: int('SVC_REFERRAL_CREDIT_EXPIRY_DAYS', 365, 'Days until referral credit expires (0: never).', { min: 0, max: 3650 }),
  referralSettleIntervalSeconds: int('SVC_REFERRAL_SETTLE_INTERVAL_SECONDS', 300, 'How often referrals are settled (0: only through the admin route).', { min: 0, max: 86_400 }),
});
