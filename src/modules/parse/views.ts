/**
 * The parse record as the API shows it (sync parse answer, GET .../parse/{parse_id}):
 *   parse_id, blob_id, status (queued | running | complete | failed), mode (sync | async),
 *   created_at, started_at, completed_at, result (complete only; see docs/parsing.md for its shape),
 *   error (failed only: a message) and failure_reason (corrupt, too_large, timeout, memory,
 *   unsupported, internal), callback_url (or null).
 * A complete parse whose result was dropped by retention has result null and result_expired true.
 */
import { iso } from '../../lib/clock';
import type { DeliveryRow, ParseRow } from './store';

const time = (v: number | null) => (v === null ? null : iso(Number(v)));

/** The record without its result (a queued, running or failed parse is all of it). */
export function parseView(row: ParseRow) {
  const out: Record<string, unknown> = {
    status: row.status,
    parse_id: row.parse_id,
    blob_id: row.blob_id,
    mode: row.mode,
    content_type: row.content_type,
    created_at: time(row.created_at),
    started_at: time(row.started_at),
    completed_at: time(row.completed_at),
    callback_url: row.callback_url,
  };
  if (row.status === 'failed') {
    out.error = row.error_message;
    out.failure_reason = row.error_reason;
  }
  return out;
}

/**
 * The whole record as JSON text, the stored result spliced in as it is: a result can be megabytes,
 * and parsing it only to serialise it again blocked the event loop for every poll.
 */
export function parseViewJson(row: ParseRow, extra: Record<string, unknown> = {}): string {
  const head = JSON.stringify({ ...parseView(row), ...extra });
  if (row.status !== 'complete') return head;
  return `${head.slice(0, -1)},${row.result === null ? '"result":null,"result_expired":true' : `"result":${row.result}`}}`;
}

export function deliveryView(d: DeliveryRow) {
  return {
    attempt_number: Number(d.attempt_number),
    status: d.status as 'success' | 'failed',
    http_status: d.http_status === null ? null : Number(d.http_status),
    last_error: d.last_error,
    trigger: d.trigger as 'automatic' | 'replay',
    created_at: iso(Number(d.created_at)),
  };
}
