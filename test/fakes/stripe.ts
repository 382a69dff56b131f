/**
 * Loopback fake of the Stripe API for the parts svc uses: Customers, PaymentIntents (including
 * off-session confirm), SetupIntents. Real wire format: form-encoded bodies with bracket keys,
 * Bearer secret key, Idempotency-Key replay, JSON objects and Stripe-style error bodies. Also signs
 * webhook payloads with the stripe SDK's own test-header helper.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

export const FAKE_SECRET_KEY = 'sk_test_fake_0123456789';
export const FAKE_PUBLISHABLE_KEY = 'pk_test_fake_0123456789';
export const FAKE_WEBHOOK_SECRET = 'whsec_fake_0123456789abcdef';

/** A payment method id that the fake declines off-session (like Stripe's test card). */
export const DECLINED_PM = 'pm_card_chargeDeclined';

export interface RecordedRequest { method: string; path: string; form: Record<string, any>; idempotencyKey?: string }

const rid = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

/** metadata[agent_id]=x&automatic_payment_methods[enabled]=true → nested object. */
function parseForm(text: string): Record<string, any> {
  const out: Record<string, any> = {};
  for (const [k, v] of new URLSearchParams(text)) {
    const parts = k.replace(/\]/g, '').split('[');
    let o = out;
    for (let i = 0; i < parts.length - 1; i++) o = o[parts[i]] ??= {};
    o[parts[parts.length - 1]] = v;
  }
  return out;
}

const readBody = (req: IncomingMessage) => new Promise<string>((resolve) => {
  let s = '';
  req.on('data', (c) => (s += c));
  req.on('end', () => resolve(s));
});

export interface StripeFake {
  url: string;
  requests: RecordedRequest[];
  intents: Map<string, any>;
  /** Marks a payment intent succeeded (what the browser + Stripe would do) and returns it. */
  succeed(intentId: string): any;
  /** A webhook delivery signed like Stripe signs it. */
  signedEvent(type: string, object: Record<string, unknown>, opts?: { id?: string; secret?: string; timestamp?: number }): { payload: string; header: string; id: string };
  close(): Promise<void>;
}

export async function startStripeFake(): Promise<StripeFake> {
  const requests: RecordedRequest[] = [];
  const intents = new Map<string, any>();
  const idem = new Map<string, { status: number; body: unknown }>();
  const sdk = new Stripe(FAKE_SECRET_KEY);

  const error = (status: number, type: string, message: string, extra: Record<string, unknown> = {}) =>
    ({ status, body: { error: { type, message, ...extra } } });

  function handle(method: string, path: string, form: Record<string, any>): { status: number; body: unknown } {
    const now = Math.floor(Date.now() / 1000);
    if (method === 'POST' && path === '/v1/customers') {
      return { status: 200, body: { id: rid('cus'), object: 'customer', created: now, metadata: form.metadata ?? {}, livemode: false } };
    }
    if (method === 'POST' && path === '/v1/payment_intents') {
      const amount = Number(form.amount);
      if (!Number.isInteger(amount) || amount < 50) return error(400, 'invalid_request_error', 'Amount must be at least $0.50 usd', { param: 'amount', code: 'amount_too_small' });
      const id = rid('pi');
      const pi: any = {
        id, object: 'payment_intent', amount, amount_received: 0, currency: form.currency, customer: form.customer ?? null,
        client_secret: `${id}_secret_${randomBytes(12).toString('hex')}`, metadata: form.metadata ?? {}, created: now,
        payment_method: form.payment_method ?? null, setup_future_usage: form.setup_future_usage ?? null,
        status: 'requires_payment_method', livemode: false,
      };
      if (form.confirm === 'true' && form.off_session === 'true') {
        if (!form.payment_method) return error(400, 'invalid_request_error', 'A payment method is required to confirm off-session', { param: 'payment_method' });
        if (form.payment_method === DECLINED_PM) {
          pi.status = 'requires_payment_method';
          intents.set(id, pi);
          return error(402, 'card_error', 'Your card was declined.', { code: 'card_declined', decline_code: 'generic_decline', payment_intent: pi });
        }
        pi.status = 'succeeded';
        pi.amount_received = amount;
      }
      intents.set(id, pi);
      return { status: 200, body: pi };
    }
    const got = /^\/v1\/payment_intents\/([\w]+)$/.exec(path);
    if (method === 'GET' && got) {
      const pi = intents.get(got[1]);
      return pi ? { status: 200, body: pi } : error(404, 'invalid_request_error', `No such payment_intent: '${got[1]}'`, { code: 'resource_missing' });
    }
    if (method === 'POST' && path === '/v1/setup_intents') {
      const id = rid('seti');
      return {
        status: 200,
        body: {
          id, object: 'setup_intent', customer: form.customer ?? null, usage: form.usage ?? 'off_session', metadata: form.metadata ?? {},
          client_secret: `${id}_secret_${randomBytes(12).toString('hex')}`, status: 'requires_payment_method', created: now, livemode: false,
        },
      };
    }
    return error(404, 'invalid_request_error', `Unrecognized request URL (${method}: ${path}).`);
  }

  // A fault in the fake answers 500 (as Stripe would) rather than becoming an unhandled rejection.
  const server: Server = createServer((req, res) => {
    serve(req, res).catch((e: unknown) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { type: 'api_error', message: `fake Stripe failed: ${String(e)}` } }));
    });
  });
  async function serve(req: IncomingMessage, res: ServerResponse) {
    const text = await readBody(req);
    const path = (req.url ?? '/').split('?')[0];
    const method = req.method ?? 'GET';
    const form = parseForm(method === 'GET' ? (req.url ?? '').split('?')[1] ?? '' : text);
    const key = req.headers['idempotency-key'] as string | undefined;
    requests.push({ method, path, form, idempotencyKey: key });
    let out: { status: number; body: unknown };
    if (req.headers.authorization !== `Bearer ${FAKE_SECRET_KEY}`) {
      out = error(401, 'invalid_request_error', 'Invalid API Key provided');
    } else if (key && idem.has(`${method} ${path} ${key}`)) {
      out = idem.get(`${method} ${path} ${key}`)!;
    } else {
      out = handle(method, path, form);
      if (key) idem.set(`${method} ${path} ${key}`, out);
    }
    res.writeHead(out.status, { 'content-type': 'application/json', 'request-id': rid('req') });
    res.end(JSON.stringify(out.body));
  }
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url, requests, intents,
    succeed(intentId) {
      const pi = intents.get(intentId);
      if (!pi) throw new Error(`no intent ${intentId}`);
      Object.assign(pi, { status: 'succeeded', amount_received: pi.amount, payment_method: pi.payment_method ?? rid('pm') });
      return pi;
    },
    signedEvent(type, object, opts = {}) {
      const id = opts.id ?? rid('evt');
      const payload = JSON.stringify({ id, object: 'event', api_version: '2025-01-27', created: Math.floor(Date.now() / 1000), type, livemode: false, data: { object } });
      const header = sdk.webhooks.generateTestHeaderString({ payload, secret: opts.secret ?? FAKE_WEBHOOK_SECRET, timestamp: opts.timestamp });
      return { payload, header, id };
    },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** Settings that point svc at the fake. */
export const stripeEnv = (fake: StripeFake): Record<string, string> => ({
  STRIPE_SECRET_KEY: FAKE_SECRET_KEY, STRIPE_PUBLISHABLE_KEY: FAKE_PUBLISHABLE_KEY, STRIPE_WEBHOOK_SECRET: FAKE_WEBHOOK_SECRET,
  SVC_STRIPE_API_BASE: fake.url,
});
