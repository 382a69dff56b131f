/**
 * Stripe through the official SDK: PaymentIntents, Customers, SetupIntents and webhook signature
 * verification. The API base is configurable (tests use the loopback fake in test/fakes/stripe.ts,
 * which speaks Stripe's wire format: form-encoded requests, JSON responses).
 */
import Stripe from 'stripe';
import { PaymentsError, type PaymentIntentView, type PaymentsGateway, type WebhookEvent } from './types';

export interface StripeOptions {
  secretKey: string;
  webhookSecret: string;
  apiBase?: string;
  toleranceSeconds: number;
  timeoutMs?: number;
}

const view = (pi: Stripe.PaymentIntent): PaymentIntentView => ({
  id: pi.id, client_secret: pi.client_secret, amount: pi.amount, currency: pi.currency, status: pi.status,
  customer: typeof pi.customer === 'string' ? pi.customer : pi.customer?.id ?? null,
});

function wrap(e: unknown): PaymentsError {
  if (e instanceof Stripe.errors.StripeCardError) return new PaymentsError('PAYMENT_FAILED', e.message);
  const m = e instanceof Error ? e.message : String(e);
  return new PaymentsError('PAYMENT_PROCESSOR_ERROR', `payment processor error: ${m}`);
}

export function createStripeGateway(o: StripeOptions): PaymentsGateway {
  const base = o.apiBase ? new URL(o.apiBase) : undefined;
  const stripe = new Stripe(o.secretKey, {
    maxNetworkRetries: 1,
    timeout: o.timeoutMs ?? 20_000,
    ...(base ? { host: base.hostname, port: Number(base.port || (base.protocol === 'https:' ? 443 : 80)), protocol: base.protocol.replace(':', '') as 'http' | 'https' } : {}),
  });
  const call = async <T>(f: () => Promise<T>): Promise<T> => {
    try {
      return await f();
    } catch (e) {
      throw wrap(e);
    }
  };

  return {
    processor: 'stripe',
    createCustomer: ({ agentId, idempotencyKey }) =>
      call(async () => ({ id: (await stripe.customers.create({ metadata: { agent_id: agentId } }, { idempotencyKey })).id })),

    createPaymentIntent: (i) => call(async () => view(await stripe.paymentIntents.create({
      amount: i.amountCents, currency: i.currency, customer: i.customerId, metadata: i.metadata,
      automatic_payment_methods: { enabled: true },
      // Saves the card for later merchant-initiated refills when the payer agrees on the page.
      setup_future_usage: 'off_session',
    }, i.idempotencyKey ? { idempotencyKey: i.idempotencyKey } : undefined))),

    createSetupIntent: (i) => call(async () => {
      const si = await stripe.setupIntents.create({ customer: i.customerId, usage: 'off_session', metadata: i.metadata, automatic_payment_methods: { enabled: true } });
      return { id: si.id, client_secret: si.client_secret };
    }),

    chargeOffSession: (i) => call(async () => view(await stripe.paymentIntents.create({
      amount: i.amountCents, currency: i.currency, customer: i.customerId, payment_method: i.paymentMethodId,
      off_session: true, confirm: true, metadata: i.metadata,
    }, { idempotencyKey: i.idempotencyKey }))),

    verifyWebhook(rawBody, signatureHeader) {
      if (!signatureHeader) throw new PaymentsError('WEBHOOK_SIGNATURE_INVALID', 'missing Stripe-Signature header');
      // The SDK refuses a signature older than the tolerance; one dated in the future is refused the
      // same way here, or a signature made ahead of time would stay replayable for that long.
      const t = Number(/(?:^|,)\s*t=(\d+)/.exec(signatureHeader)?.[1]);
      if (Number.isFinite(t) && t - Math.floor(Date.now() / 1000) > o.toleranceSeconds) {
        throw new PaymentsError('WEBHOOK_SIGNATURE_INVALID', 'webhook signature rejected: timestamp is in the future, outside the tolerance zone');
      }
      try {
        return stripe.webhooks.constructEvent(rawBody, signatureHeader, o.webhookSecret, o.toleranceSeconds) as unknown as WebhookEvent;
      } catch (e) {
        throw new PaymentsError('WEBHOOK_SIGNATURE_INVALID', `webhook signature rejected: ${(e as Error).message}`);
      }
    },
  };
}

export { PaymentsError };
export type { PaymentsGateway, WebhookEvent, PaymentIntentView };
