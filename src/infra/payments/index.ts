import type { Config } from '../../config';
import { createStripeGateway } from './stripe';
import type { PaymentsGateway } from './types';

export * from './types';

/** The gateway when billing is configured (all three Stripe secrets set), else undefined. */
export function paymentsFromConfig(c: Config['billing']): PaymentsGateway | undefined {
  if (!c.stripeSecretKey || !c.stripePublishableKey || !c.stripeWebhookSecret) return undefined;
  return createStripeGateway({
    secretKey: c.stripeSecretKey, webhookSecret: c.stripeWebhookSecret, apiBase: c.stripeApiBase, toleranceSeconds: c.webhookToleranceSeconds,
  });
}
