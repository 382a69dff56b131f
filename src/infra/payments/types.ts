/** The payment processor as svc needs it. Card data never passes through svc: the browser talks to the processor. */
export interface PaymentIntentView {
  id: string;
  client_secret: string | null;
  amount: number;
  currency: string;
  status: string;
  customer: string | null;
}

export interface WebhookEvent {
  id: string;
  type: string;
  data: { object: Record<string, any> };
}

export interface PaymentsGateway {
  readonly processor: 'stripe';
  createCustomer(input: { agentId: string; idempotencyKey: string }): Promise<{ id: string }>;
  createPaymentIntent(input: {
    amountCents: number; currency: string; customerId: string; metadata: Record<string, string>; idempotencyKey?: string;
  }): Promise<PaymentIntentView>;
  createSetupIntent(input: { customerId: string; metadata: Record<string, string> }): Promise<{ id: string; client_secret: string | null }>;
  /** Merchant-initiated charge of a saved card (auto top-up). */
  chargeOffSession(input: {
    amountCents: number; currency: string; customerId: string; paymentMethodId: string; metadata: Record<string, string>; idempotencyKey: string;
  }): Promise<PaymentIntentView>;
  /** Verifies the signature header over the exact raw body; throws PaymentsError WEBHOOK_SIGNATURE_INVALID. */
  verifyWebhook(rawBody: Buffer, signatureHeader: string | undefined): WebhookEvent;
}

export class PaymentsError extends Error {
  constructor(public readonly code: 'WEBHOOK_SIGNATURE_INVALID' | 'PAYMENT_FAILED' | 'PAYMENT_PROCESSOR_ERROR', message: string) {
    super(message);
  }
}
