/**
 * Stripe through the official SDK: PaymentIntents, Customers, SetupIntents and webhook signature
 * verification. The API base is configurable (tests use the loopback fake in test/fakes/stripe.ts,
 * which speaks Stripe's wire format: form-encoded requests, JSON responses).
 */
import { createRequire } from 'node:module';
import type Stripe from 'stripe';
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

/**
 * The SDK, loaded when a gateway is made: a host without billing configured never loads it (it is
 * ~20 MiB of resident memory and part of start-up time).
 */
const loadSdk = (): typeof Stripe => createRequire(import.meta.url)('stripe') as typeof Stripe;

function wrap(Sdk: typeof Stripe, e: unknown): PaymentsError {
  if (e instanceof Sdk.errors.StripeCardError) return new PaymentsError('PAYMENT_FAILED', e.message);
  const m = e instanceof Error ? e.message : String(e);
  return new PaymentsError('PAYMENT_PROCESSOR_ERROR', `payment processor error: ${m}`);
}

export function createStripeGateway(o: StripeOptions): PaymentsGateway {
  const Sdk = loadSdk();
  const nodeCrypto = Sdk.createNodeCryptoProvider();
  const base = o.apiBase ? new URL(o.apiBase) : undefined;
  const stripe = new Sdk(o.secretKey, {
    maxNetworkRetries: 1,
    timeout: o.timeoutMs ?? 20_000,
    ...(base ? { host: base.hostname, port: Number(base.port || (base.protocol === 'https:' ? 443 : 80)), protocol: base.protocol.replace(':', '') as 'http' | 'https' } : {}),
  });
  const call = async <T>(f: () => Promise<T>): Promise<T> => {
    try {
      return await f();
    } catch (e) {
      throw wrap(Sdk, e);
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
      // One parse of the header, the SDK's: it signs `<t>.<payload>` with the timestamp it read from
      // the header (of several t= the last) and compares that against the v1 signatures. The crypto
      // provider below sees that signed content, so the timestamp judged here is the one the
      // signature covers, whatever else the header holds.
      let signedAt: number | undefined;
      const seeSignedTimestamp = (content: string) => {
        signedAt = Number(content.slice(0, content.indexOf('.')));
      };
      const provider: Stripe.CryptoProvider = {
        computeHMACSignature: (content, secret) => {
          seeSignedTimestamp(content);
          return nodeCrypto.computeHMACSignature(content, secret);
        },
        computeHMACSignatureAsync: async (content, secret) => {
          seeSignedTimestamp(content);
          return nodeCrypto.computeHMACSignatureAsync(content, secret);
        },
        computeSHA256Async: (data) => nodeCrypto.computeSHA256Async(data),
      };
      let event: WebhookEvent;
      try {
        // Tolerance 0: the SDK checks the signature only; the timestamp rule is the one below.
        event = stripe.webhooks.constructEvent(rawBody, signatureHeader, o.webhookSecret, 0, provider) as unknown as WebhookEvent;
      } catch (e) {
        throw new PaymentsError('WEBHOOK_SIGNATURE_INVALID', `webhook signature rejected: ${(e as Error).message}`);
      }
      // One rule: the signed timestamp lies within the tolerance of now, on either side. A signature
      // dated in the future would otherwise stay replayable for as long as it is ahead.
      if (signedAt === undefined || !Number.isFinite(signedAt)) {
        throw new PaymentsError('WEBHOOK_SIGNATURE_INVALID', 'webhook signature rejected: no readable timestamp');
      }
      const skew = signedAt - Math.floor(Date.now() / 1000);
      if (Math.abs(skew) > o.toleranceSeconds) {
        const where = skew > 0 ? 'in the future' : 'too old';
        throw new PaymentsError('WEBHOOK_SIGNATURE_INVALID', `webhook signature rejected: timestamp is ${where}, outside the tolerance zone`);
      }
      return event;
    },
  };
}

export { PaymentsError };
export type { PaymentsGateway, WebhookEvent, PaymentIntentView };
