/**
 * The billing page (billing_page_url): static HTML + script served by svc; the browser loads
 * Stripe.js from js.stripe.com and talks to Stripe directly, so card data never reaches svc.
 */
import { readFileSync } from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';
import { ErrorBody } from '../../http/response-schemas';
import { textResponse } from './schemas';

const dir = new URL('../../../public/billing/', import.meta.url);
const read = (f: string) => readFileSync(new URL(f, dir), 'utf8');

export const billingPageRoutes = (o: { path: string; stripeJsUrl: string }): FastifyPluginAsync => async (app) => {
  const stripeOrigin = new URL(o.stripeJsUrl).origin;
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  const html = read('index.html')
    .replaceAll('{{ASSET_BASE}}', esc(o.path))
    .replaceAll('{{STRIPE_JS_URL}}', esc(o.stripeJsUrl))
    .replaceAll('{{CONFIG_URL}}', '/v1/billing/config');
  // A Map: a name such as "constructor" or "__proto__" must not find anything on a prototype.
  const assets = new Map<string, { type: string; body: string }>([
    ['billing.js', { type: 'text/javascript; charset=utf-8', body: read('billing.js') }],
    ['billing.css', { type: 'text/css; charset=utf-8', body: read('billing.css') }],
  ]);
  const csp = [
    "default-src 'self'", `script-src 'self' ${stripeOrigin}`, `frame-src ${stripeOrigin} https://hooks.stripe.com`,
    `connect-src 'self' https://api.stripe.com ${stripeOrigin}`, "img-src 'self' data: https://*.stripe.com", "style-src 'self' 'unsafe-inline'",
    "frame-ancestors 'none'", // a payment page is never shown inside another site's frame (clickjacking)
  ].join('; ');

  app.get(o.path, { schema: { summary: 'Billing page (completes a payment in the browser)', response: { 200: textResponse(['text/html'], 'The billing page (HTML)') } }, config: { auth: 'none' } }, async (_req, reply) =>
    reply.type('text/html; charset=utf-8').header('content-security-policy', csp).header('x-frame-options', 'DENY').header('cache-control', 'no-store').send(html));

  app.get(`${o.path}/:asset`, {
    schema: { summary: 'Billing page assets', response: { 200: textResponse(['text/javascript', 'text/css'], 'The script or style sheet of the billing page'), 404: ErrorBody } },
    config: { auth: 'none' },
  }, async (req, reply) => {
    const a = assets.get((req.params as { asset: string }).asset);
    if (!a) return reply.code(404).send({ error_code: 'ROUTE_NOT_FOUND', message: 'No such billing page asset' });
    return reply.type(a.type).header('cache-control', 'public, max-age=300').send(a.body);
  });
};
