/**
 * Timestamped HMAC signatures in the style of Stripe's webhooks, used for messages pushed to
 * POST /internal/queue/parse and (with the agent's own secret) for parse callbacks:
 *
 *   <header>: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>
 *
 * The receiver recomputes the HMAC over the exact raw body bytes, compares in constant time and
 * refuses a timestamp further than the tolerance from its clock, so a captured message cannot be
 * replayed later. Several v1= entries may appear (secret rotation); any match is accepted.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const PUSH_SIGNATURE_HEADER = 'svc-queue-signature';

export function signatureHeader(secret: string, body: string | Buffer, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.`).update(body).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

export type SignatureProblem = 'missing' | 'malformed' | 'mismatch' | 'expired';

/** undefined when valid; otherwise why not. */
export function checkSignature(
  secret: string, body: string | Buffer, header: string | undefined, nowMs: number, toleranceSeconds: number,
): SignatureProblem | undefined {
  if (!header) return 'missing';
  let t: number | undefined;
  const macs: string[] = [];
  for (const part of header.split(',')) {
    const [k, v] = part.trim().split('=', 2);
    if (k === 't' && v && /^\d{1,12}$/.test(v)) t = Number(v);
    else if (k === 'v1' && v && /^[0-9a-f]{64}$/.test(v)) macs.push(v);
  }
  if (t === undefined || macs.length === 0) return 'malformed';
  const expected = Buffer.from(signatureHeader(secret, body, t).split('v1=')[1]!, 'hex');
  if (!macs.some((m) => timingSafeEqual(Buffer.from(m, 'hex'), expected))) return 'mismatch';
  if (Math.abs(nowMs / 1000 - t) > toleranceSeconds) return 'expired';
  return undefined;
}

export const signPushMessage = (secret: string, body: string, nowMs: number) => signatureHeader(secret, body, Math.floor(nowMs / 1000));
export const verifyPushMessage = (secret: string, body: string, header: string | undefined, nowMs: number, toleranceSeconds = 300) =>
  checkSignature(secret, body, header, nowMs, toleranceSeconds);
