/**
 * Billing service: checkout of slider credits, card set-up, auto top-up and the payment-processor
 * webhook. Credit is granted only from verified webhook events (or the processor's synchronous
 * answer to an off-session charge), once per payment intent id, whatever the delivery count.
 */
import { ApiError } from '../../http/errors';
import type { PaymentsGateway, WebhookEvent } from '../../infra/payments';
import { PaymentsError } from '../../infra/payments';
import type { Clock } from '../../lib/clock';
import { credits as toUnits, formatUsd } from '../../lib/money';
import type { Credits } from './credits';
import type { LowBalance } from './metering';
import { MAX_PURCHASE_CREDITS, MIN_PURCHASE_CREDITS, PRICING_BLOCK, quoteCredits } from './pricing';
import type { BillingStore } from './store';

export interface BillingServiceDeps {
  store: BillingStore;
  credits: Credits;
  clock: Clock;
  payments?: PaymentsGateway;
  publishableKey?: string;
  billingPageUrl: string;
  currency?: string;
  log?: (msg: string, err?: unknown) => void;
  /** Whether an agent id names a registered agent (events for any other are not applied). */
  agentExists?: (agentId: string) => Promise<boolean>;
}

/** Purchase types that carry credits in payment intent metadata. */
const CREDIT_PURCHASES = new Set(['slider', 'auto_topup']);

export function createBillingService(deps: BillingServiceDeps) {
  const { store, clock, credits } = deps;
  const currency = deps.currency ?? 'usd';
  const log = deps.log ?? (() => {});

  function gateway(preview?: unknown): PaymentsGateway {
    if (!deps.payments) {
      throw new ApiError(503, 'BILLING_NOT_CONFIGURED', 'Billing is not configured on this host (no payment processor keys); nothing was charged',
        preview === undefined ? { pricing: PRICING_BLOCK } : { pricing_preview: preview, pricing: PRICING_BLOCK });
    }
    return deps.payments;
  }

  function processorFailure(e: unknown): never {
    if (e instanceof PaymentsError) throw new ApiError(502, 'PAYMENT_PROCESSOR_ERROR', e.message);
    throw e;
  }

  /** The agent's processor customer, created once (the idempotency key makes a race create one). */
  async function customerOf(agentId: string): Promise<string> {
    const account = await store.getAccount(agentId);
    if (account?.payment_customer_id) return account.payment_customer_id;
    const { id } = await gateway().createCustomer({ agentId, idempotencyKey: `svc-customer-${agentId}` }).catch(processorFailure);
    await store.withLocks([agentId], clock.now(), async (trx, accounts) => {
      if (!accounts.get(agentId)!.payment_customer_id) await store.updateAccount(trx, agentId, { payment_customer_id: id }, clock.now());
    });
    return (await store.getAccount(agentId))!.payment_customer_id!;
  }

  async function grantFromIntent(intent: Record<string, any>): Promise<{ granted: boolean; reason?: string }> {
    const md = (intent.metadata ?? {}) as Record<string, string>;
    if (!CREDIT_PURCHASES.has(md.purchase_type)) return { granted: false, reason: 'not a credit purchase' };
    // Signed events are trusted for who and what, and still checked against the payment itself: the
    // intent succeeded, and what was received pays for the credits at the slider's price.
    if (intent.status !== 'succeeded') return { granted: false, reason: `payment intent status is ${String(intent.status ?? 'missing')}` };
    const n = Number(md.credits);
    if (!md.agent_id || !Number.isSafeInteger(n) || n <= 0) return { granted: false, reason: 'metadata without agent_id or credits' };
    let quote;
    try {
      quote = quoteCredits(n);
    } catch {
      return { granted: false, reason: `credits outside ${MIN_PURCHASE_CREDITS}-${MAX_PURCHASE_CREDITS}` };
    }
    const received = intent.amount_received;
    if (typeof received !== 'number' || received < quote.amount_cents || String(intent.currency ?? '').toLowerCase() !== currency.toLowerCase()) {
      return { granted: false, reason: `amount received does not pay for ${n} credits (${quote.amount_cents} ${currency} cents)` };
    }
    const { added } = await credits.add(md.agent_id, { kind: 'purchase', units: toUnits(n), ref: `pi:${intent.id}` });
    if (md.purchase_type === 'auto_topup') {
      await store.withLocks([md.agent_id], clock.now(), (trx) => store.updateAccount(trx, md.agent_id, { topup_intent_id: intent.id }, clock.now()));
    }
    return { granted: added, reason: added ? undefined : 'already granted' };
  }

  return {
    config() {
      const pk = deps.payments ? deps.publishableKey ?? null : null;
      return {
        status: 'success' as const,
        payment_processor: deps.payments ? deps.payments.processor : null,
        publishable_key: pk,
        billing_page_url: deps.billingPageUrl,
        js_env: (pk === null ? 'unconfigured' : pk.startsWith('pk_live_') ? 'live' : 'test') as 'unconfigured' | 'live' | 'test',
        currency,
      };
    },

    async checkout(agentId: string, n: number) {
      let quote;
      try {
        quote = quoteCredits(n);
      } catch {
        throw new ApiError(422, 'INVALID_CREDIT_AMOUNT', `credits must be a whole number from ${MIN_PURCHASE_CREDITS} to ${MAX_PURCHASE_CREDITS}`, { field: 'body.credits' });
      }
      const preview = { credits: quote.credits, unit_rate_usd: quote.unit_rate_usd, total_usd: quote.total_usd, currency };
      const g = gateway(preview);
      const customerId = await customerOf(agentId);
      const intent = await g.createPaymentIntent({
        amountCents: quote.amount_cents, currency, customerId,
        metadata: { agent_id: agentId, purchase_type: 'slider', credits: String(quote.credits) },
      }).catch(processorFailure);
      return {
        status: 'success' as const,
        intent_id: intent.id,
        client_secret: intent.client_secret,
        billing_page_url: `${deps.billingPageUrl}#client_secret=${encodeURIComponent(intent.client_secret ?? '')}`,
        currency: intent.currency,
        amount: intent.amount,
        customer_id: customerId,
        credits: quote.credits,
        unit_rate_usd: quote.unit_rate_usd,
        total_usd: quote.total_usd,
      };
    },

    /** Card capture and consent for merchant-initiated refills (a zero-amount SetupIntent). */
    async setup(agentId: string) {
      const g = gateway();
      const customerId = await customerOf(agentId);
      const si = await g.createSetupIntent({ customerId, metadata: { agent_id: agentId, purpose: 'recharge_consent' } }).catch(processorFailure);
      return {
        status: 'success' as const,
        setup_intent_id: si.id,
        client_secret: si.client_secret,
        billing_page_url: `${deps.billingPageUrl}#mode=setup&client_secret=${encodeURIComponent(si.client_secret ?? '')}`,
        customer_id: customerId,
        amount: 0,
        currency,
      };
    },

    async configureAutoTopup(agentId: string, input: { enabled: boolean; threshold_credits?: number; topup_credits?: number }) {
      // A host without a payment processor cannot refill: enabling is refused as setup is (disabling still works).
      if (input.enabled) gateway();
      const now = clock.now();
      return store.withLocks([agentId], now, async (trx, accounts) => {
        const a = accounts.get(agentId)!;
        if (input.enabled) {
          if (!a.payment_method_id) throw new ApiError(409, 'PAYMENT_METHOD_REQUIRED', 'Save a card first: POST /v1/billing/setup and complete it on the billing page');
          if (!a.recharge_consent_id) throw new ApiError(409, 'RECHARGE_CONSENT_REQUIRED', 'No recharge consent on file: complete POST /v1/billing/setup on the billing page');
          if (input.threshold_credits === undefined || input.topup_credits === undefined) {
            throw new ApiError(422, 'VALIDATION_FAILED', 'threshold_credits and topup_credits are required when enabling auto top-up', { field: 'body' });
          }
          quoteCredits(input.topup_credits);
        }
        const patch = input.enabled
          ? { auto_topup_enabled: 1, auto_topup_threshold_units: toUnits(input.threshold_credits!), auto_topup_units: toUnits(input.topup_credits!), topup_dip_open: 0 }
          : { auto_topup_enabled: 0, topup_dip_open: 0 };
        await store.updateAccount(trx, agentId, patch, now);
        return {
          status: 'success' as const,
          auto_topup: input.enabled,
          threshold_credits: input.enabled ? input.threshold_credits! : null,
          threshold_usd: input.enabled ? formatUsd(toUnits(input.threshold_credits!)) : null,
          topup_credits: input.enabled ? input.topup_credits! : null,
          topup_total_usd: input.enabled ? quoteCredits(input.topup_credits!).total_usd : null,
          payment_method_id: a.payment_method_id,
          recharge_consent_id: a.recharge_consent_id,
        };
      });
    },

    /**
     * Metering saw a charge take the balance under the threshold and marked the dip (once, under
     * the lock). One off-session charge; its idempotency key is per dip, so a retry cannot charge twice.
     */
    async refill(e: LowBalance): Promise<void> {
      const a = e.account;
      if (!deps.payments || !a.payment_customer_id || !a.payment_method_id || !a.recharge_consent_id) return;
      const quote = quoteCredits(a.auto_topup_units / 100);
      try {
        const pi = await deps.payments.chargeOffSession({
          amountCents: quote.amount_cents, currency, customerId: a.payment_customer_id, paymentMethodId: a.payment_method_id,
          metadata: { agent_id: e.agentId, purchase_type: 'auto_topup', credits: String(quote.credits), recharge_consent_id: a.recharge_consent_id },
          idempotencyKey: `svc-topup-${e.agentId}-${e.chargeId}`,
        });
        if (pi.status === 'succeeded') {
          await grantFromIntent({
            id: pi.id, status: pi.status, amount_received: quote.amount_cents, currency,
            metadata: { agent_id: e.agentId, purchase_type: 'auto_topup', credits: String(quote.credits) },
          });
        }
      } catch (err) {
        // The dip stays marked: no second attempt until the agent re-enables auto top-up.
        log('auto top-up charge failed', err);
      }
    },

    verifyWebhook(raw: Buffer, signature: string | undefined): WebhookEvent {
      if (!deps.payments) throw new ApiError(503, 'BILLING_NOT_CONFIGURED', 'Billing is not configured on this host');
      try {
        return deps.payments.verifyWebhook(raw, signature);
      } catch (e) {
        if (e instanceof PaymentsError) throw new ApiError(400, 'WEBHOOK_SIGNATURE_INVALID', e.message);
        throw e;
      }
    },

    /** Applies a verified event. Idempotent per event id and, for grants, per payment intent id. */
    async handleEvent(event: WebhookEvent): Promise<{ received: true; effect: string }> {
      const obj = event.data?.object ?? {};
      const agentId: string | undefined = obj.metadata?.agent_id
        ?? (typeof obj.customer === 'string' ? (await store.findAgentByCustomer(obj.customer))?.agent_id : undefined);
      if (!agentId) return { received: true, effect: 'ignored: no agent' };
      // A signed event can still name an agent that does not exist (a typo in metadata, another svc's
      // customer): no credit or account is recorded for nobody.
      if (deps.agentExists && !(await deps.agentExists(agentId))) return { received: true, effect: 'ignored: unknown agent' };
      const now = clock.now();
      switch (event.type) {
        case 'payment_intent.succeeded': {
          await store.withLocks([agentId], now, async (trx) => store.recordEvent(trx, event.id, event.type, now));
          // Granted per intent id even when the event id is new (a re-sent event), so never twice.
          const r = await grantFromIntent(obj);
          return { received: true, effect: r.granted ? 'credits_granted' : `no grant: ${r.reason}` };
        }
        case 'payment_consent.verified':
        case 'setup_intent.succeeded': {
          const consent = event.type === 'payment_consent.verified' ? String(obj.id) : undefined;
          const pm = typeof obj.payment_method === 'string' ? obj.payment_method : undefined;
          // Applied once per event id, in the transaction that records it: a replayed older event
          // must not put back a consent or card a newer one replaced.
          const fresh = await store.withLocks([agentId], now, async (trx) => {
            if (!(await store.recordEvent(trx, event.id, event.type, now))) return false;
            await store.updateAccount(trx, agentId, {
              ...(consent ? { recharge_consent_id: consent } : {}),
              ...(pm ? { payment_method_id: pm } : {}),
              ...(obj.customer && typeof obj.customer === 'string' ? { payment_customer_id: obj.customer } : {}),
            }, now);
            return true;
          });
          if (!fresh) return { received: true, effect: 'duplicate' };
          return { received: true, effect: consent ? 'recharge_consent_stored' : 'payment_method_stored' };
        }
        default: {
          const fresh = await store.withLocks([agentId], now, async (trx) => store.recordEvent(trx, event.id, event.type, now));
          return { received: true, effect: fresh ? 'ignored' : 'duplicate' };
        }
      }
    },
  };
}

export type BillingService = ReturnType<typeof createBillingService>;
