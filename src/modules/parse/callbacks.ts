/**
 * Parse callbacks: after an async parse completes, the service POSTs JSON to the agent's HTTPS
 * callback_url through the SSRF-guarded client (no redirects followed; 2xx = delivered).
 *
 * Body: { event: "parse.completed", event_id: "evt_<parse_id>", created_at, parse_id, blob_id,
 * status: "complete", status_url, result } — event_id is the same on every attempt and replay, so
 * the receiver can drop duplicates.
 * Signature header (Stripe-like, see infra/queue/push-signature.ts):
 *   Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(agent's callback secret, "<t>.<raw body>")>
 * The agent's secret (whsec_...) is returned when it asks for an async parse with a callback_url.
 * Automatic attempts sign afresh (t = attempt time); a replay re-sends the stored body and the
 * latest signature unchanged (the API's rule) — receivers that enforce a timestamp tolerance
 * should recognise replays by `Svc-Replay: true` and their event_id.
 */
import { randomUUID } from 'node:crypto';
import { signatureHeader } from '../../infra/queue/push-signature';
import { isWebError, type GuardedClient } from '../../infra/web';
import { iso, type Clock } from '../../lib/clock';
import type { DeliveryRow, ParseRow, ParseStore } from './store';

export const SIGNATURE_HEADER = 'svc-signature';

export function callbackBody(row: ParseRow, baseUrl: string, now: number): string {
  const result = row.result === null ? null : JSON.parse(row.result);
  return JSON.stringify({
    event: 'parse.completed',
    event_id: `evt_${row.parse_id}`,
    created_at: iso(now),
    parse_id: row.parse_id,
    blob_id: row.blob_id,
    status: 'complete',
    status_url: `${baseUrl}/v1/blobs/${row.blob_id}/parse/${row.parse_id}`,
    result,
  });
}

export const signCallback = (secret: string, body: string, nowMs: number) => signatureHeader(secret, body, Math.floor(nowMs / 1000));

export interface CallbackSenderDeps {
  client: GuardedClient;
  store: ParseStore;
  clock: Clock;
  timeoutMs: number;
}

/** One POST, recorded as a delivery attempt whatever happens. */
export async function sendCallback(
  deps: CallbackSenderDeps,
  row: ParseRow,
  message: { body: string; signature: string; trigger: 'automatic' | 'replay' },
): Promise<DeliveryRow> {
  let httpStatus: number | null = null;
  let error: string | null = null;
  try {
    const res = await deps.client.fetch(row.callback_url!, {
      method: 'POST',
      body: message.body,
      followRedirects: false,
      maxBytes: 64 * 1024,
      onOversize: 'truncate',
      timeoutMs: deps.timeoutMs,
      headers: {
        'content-type': 'application/json',
        accept: '*/*',
        [SIGNATURE_HEADER]: message.signature,
        'svc-event-id': `evt_${row.parse_id}`,
        ...(message.trigger === 'replay' ? { 'svc-replay': 'true' } : {}),
      },
    });
    httpStatus = res.status;
    if (res.status < 200 || res.status > 299) error = `receiver answered HTTP ${res.status}`;
  } catch (e) {
    error = isWebError(e) ? `${e.reason}: ${e.message}` : `delivery failed: ${e instanceof Error ? e.message : String(e)}`;
  }
  return deps.store.addDelivery({
    delivery_id: randomUUID(), parse_id: row.parse_id, agent_id: row.agent_id, trigger: message.trigger,
    status: error === null ? 'success' : 'failed', http_status: httpStatus, last_error: error, created_at: deps.clock.now(),
  });
}
