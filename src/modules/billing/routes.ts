/**
 * Billing routes: snapshot, config, checkout, setup, auto top-up, the retired pack checkout, the
 * processor webhook (its own plugin: raw-body parser scoped to it) and the billing page.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { agentOf } from '../../http/auth';
import { ApiError } from '../../http/errors';
import { billingPageRoutes } from './page-routes';
import { errorResponses } from '../../http/response-schemas';
import {
  AutoTopupBody, AutoTopupResponse, BillingConfigResponse, BillingSnapshotResponse, CheckoutBody, CheckoutResponse, CheckoutValidationCodes, GrantResponse,
  ReferralSettleResponse, SetupBody, SetupResponse,
} from './schemas';
import type { BillingService } from './service';
import { billingSnapshot, type StorageUsagePort } from './snapshot';
import type { BillingStore } from './store';
import type { Clock } from '../../lib/clock';
import { webhookRoutes } from './webhook-routes';
import type { ReferralPayouts } from './referrals';
import type { Credits } from './credits';
import { Type } from 'typebox';
import { isUuid } from '../../lib/ids';
import { credits as toUnits } from '../../lib/money';

export interface BillingRouteDeps {
  billing: BillingService;
  store: BillingStore;
  clock: Clock;
  /** Writes the agent's leased calls first (metering `settle`), so the snapshot counts every call. */
  settle: (agentId: string) => Promise<void>;
  storage?: () => StorageUsagePort | undefined;
  billingPagePath?: string;
  stripeJsUrl: string;
  referrals: ReferralPayouts;
  credits: Credits;
  /** Whether an agent id names a registered agent (a grant for nobody is refused). */
  agentExists: (agentId: string) => Promise<boolean>;
}

const GrantBody = Type.Object({
  agent_id: Type.String(),
  credits: Type.Integer({ minimum: 1, maximum: 10_000_000 }),
  expires_in_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
  reference: Type.String({ minLength: 1, maxLength: 128, description: 'Idempotency reference: the same reference grants once' }),
}, { additionalProperties: false });

export const billingRoutes = (deps: BillingRouteDeps): FastifyPluginAsyncTypebox => async (app) => {
  const { billing } = deps;

  app.get('/v1/billing', { schema: { summary: 'Billing snapshot: credit, tier, quotas and usage this month', response: { 200: BillingSnapshotResponse } }, config: { auth: 'key', scope: 'any' } }, async (request) => {
    const a = agentOf(request);
    await deps.settle(a.agentId);
    return billingSnapshot({ store: deps.store, clock: deps.clock, storage: deps.storage?.(), processor: billing.config().payment_processor }, a.agentId, a.tier);
  });

  app.get('/v1/billing/config', { schema: { summary: 'Payment processor settings for the billing page', response: { 200: BillingConfigResponse } }, config: { auth: 'none' } }, async () => billing.config());

  app.post('/v1/billing/credits/checkout', {
    schema: {
      body: CheckoutBody, summary: 'Buy credits with the volume-discount slider: creates a payment intent to pay on the billing page',
      response: { 200: CheckoutResponse, ...errorResponses(422, 502, 503) },
    },
    config: { auth: 'key', errors: { 502: ['PAYMENT_PROCESSOR_ERROR'], 503: ['BILLING_NOT_CONFIGURED'] }, validationCodes: CheckoutValidationCodes },
  }, async (request) => billing.checkout(agentOf(request).agentId, request.body.credits));

  app.post('/v1/billing/packs/checkout', { schema: { summary: 'Retired: fixed credit packs (use /v1/billing/credits/checkout)', response: errorResponses(410) }, config: { auth: 'key', success: [], errors: { 410: ['PACK_CHECKOUT_RETIRED'] } } }, async () => {
    throw new ApiError(410, 'PACK_CHECKOUT_RETIRED', 'Fixed-pack checkout is retired: buy any amount with POST /v1/billing/credits/checkout', {
      replacement_url: '/v1/billing/credits/checkout',
    });
  });

  app.post('/v1/billing/setup', {
    schema: { body: SetupBody, summary: 'Save a card and consent to merchant-initiated refills (zero-amount intent)', response: { 200: SetupResponse, ...errorResponses(502, 503) } },
    config: { auth: 'key', errors: { 502: ['PAYMENT_PROCESSOR_ERROR'], 503: ['BILLING_NOT_CONFIGURED'] } },
    // The request has no body: no body at all is the usual call (the schema still refuses a non-object one).
    preValidation: async (request) => {
      request.body ??= {};
    },
  }, async (request) => billing.setup(agentOf(request).agentId));

  app.post('/v1/billing/auto-topup', {
    schema: { body: AutoTopupBody, summary: 'Enable or disable automatic refills when the balance falls under a threshold', response: { 200: AutoTopupResponse, ...errorResponses(409, 422) } },
    config: { auth: 'key', errors: { 409: ['PAYMENT_METHOD_REQUIRED', 'RECHARGE_CONSENT_REQUIRED'], 503: ['BILLING_NOT_CONFIGURED'] } },
  }, async (request) => billing.configureAutoTopup(agentOf(request).agentId, request.body));

  app.post('/admin/billing/referrals/settle', { schema: { summary: 'Decide pending referral payouts now (admin)', response: { 200: ReferralSettleResponse } }, config: { auth: 'admin' } },
    async () => ({ status: 'success' as const, ...(await deps.referrals.settle()) }));

  app.post('/admin/billing/grants', {
    schema: { body: GrantBody, summary: 'Grant credit to an agent, optionally expiring (admin)', response: { 200: GrantResponse, ...errorResponses(404) } },
    config: { auth: 'admin', errors: { 404: ['AGENT_NOT_FOUND'] } },
  }, async (request) => {
    const b = request.body;
    const agentId = b.agent_id.toLowerCase();
    // A well-formed id of no registered agent too: no credit is recorded for nobody.
    if (!isUuid(agentId) || !(await deps.agentExists(agentId))) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this id');
    const r = await deps.credits.add(agentId, {
      kind: 'grant', units: toUnits(b.credits), ref: `admin:${b.reference}`,
      expiresAt: b.expires_in_days ? deps.clock.now() + b.expires_in_days * 86_400_000 : null,
    });
    return { status: 'success' as const, granted: r.added, credits_remaining_usd: (await billingSnapshot({ store: deps.store, clock: deps.clock, processor: null }, agentId, 'free')).credits_remaining_usd };
  });

  await app.register(webhookRoutes({ billing }));
  await app.register(billingPageRoutes({ path: deps.billingPagePath ?? '/billing', stripeJsUrl: deps.stripeJsUrl }));
};
