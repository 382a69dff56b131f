/**
 * POST /v1/billing/payment-processor/webhook. The signature covers the exact bytes sent, so this
 * plugin (and only it) parses application/json as a raw Buffer; the event is parsed by the SDK
 * after verification. A bad signature is refused before anything is read or written.
 */
import type { FastifyPluginAsync } from 'fastify';
import { errorResponses } from '../../http/response-schemas';
import { WebhookResponse } from './schemas';
import type { BillingService } from './service';

export const webhookRoutes = (deps: { billing: BillingService }): FastifyPluginAsync => async (app) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1_048_576 }, (_req, body, done) => done(null, body));

  app.post('/v1/billing/payment-processor/webhook', {
    schema: { summary: 'Payment processor events (signed with the Stripe-Signature header)', response: { 200: WebhookResponse, ...errorResponses(400, 503) } },
    config: { auth: 'none', errors: { 400: ['WEBHOOK_SIGNATURE_INVALID'], 503: ['BILLING_NOT_CONFIGURED'] } },
  }, async (request) => {
    const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const sig = request.headers['stripe-signature'];
    const event = deps.billing.verifyWebhook(raw, typeof sig === 'string' ? sig : undefined);
    return deps.billing.handleEvent(event);
  });
};
