/**
 * Parsing a blob (PDF, DOCX, CSV, XLSX): synchronously in one call, or queued (`?async=true`, 202)
 * and then polled at GET /v1/blobs/{blob_id}/parse/{parse_id} until it is `complete` or `failed`.
 */
import { ok, type JsonBody, type SvcClient } from './client';

/**
 * A parse record: `status` queued, running, complete (with `result`) or failed (with `error`,
 * `failure_reason`). As polled (GET .../parse/{parse_id}), as queued (202, with `status_url`), or
 * as parsed in the request (200).
 */
export type ParseRecord =
  | JsonBody<'/v1/blobs/{blob_id}/parse/{parse_id}', 'get'>
  | JsonBody<'/v1/blobs/{blob_id}/parse', 'post', 202>
  | JsonBody<'/v1/blobs/{blob_id}/parse', 'post', 200>;

export type ParseStatus = 'queued' | 'running' | 'complete' | 'failed';

/** The `status` of a parse record (svc's document types it as a string; these are its values). */
export const parseStatus = (record: Pick<ParseRecord, 'status'>): ParseStatus => record.status as ParseStatus;

export const isFinished = (record: Pick<ParseRecord, 'status'>): boolean => ['complete', 'failed'].includes(parseStatus(record));

/** A parse that did not finish within the time given; `record` is the last one seen. */
export class ParseTimeoutError extends Error {
  constructor(readonly record: ParseRecord, timeoutMs: number) {
    super(`the parse ${record.parse_id} is still ${parseStatus(record)} after ${Math.round(timeoutMs / 1000)} s`);
    this.name = 'ParseTimeoutError';
  }
}

export interface WaitOptions {
  /** Give up after this long (default 10 minutes). */
  timeoutMs?: number;
  /** First pause between polls (default 250 ms); it grows by half each poll up to maxIntervalMs. */
  intervalMs?: number;
  /** Longest pause between polls (default 2000 ms). */
  maxIntervalMs?: number;
  /** Called with each record seen, the first included. */
  onStatus?: (record: ParseRecord) => void;
  signal?: AbortSignal;
}

const sleep = (ms: number, signal?: AbortSignal) => new Promise<void>((resolve, reject) => {
  if (signal?.aborted) return reject(signal.reason as Error);
  const t = setTimeout(() => {
    signal?.removeEventListener('abort', onAbort);
    resolve();
  }, ms);
  const onAbort = () => {
    clearTimeout(t);
    reject(signal!.reason as Error);
  };
  signal?.addEventListener('abort', onAbort, { once: true });
});

/** Polls a parse until it is complete or failed and returns that record (a failed parse is returned, not thrown). */
export async function waitForParse(client: SvcClient, blobId: string, parseId: string, opts: WaitOptions = {}): Promise<ParseRecord> {
  const timeoutMs = opts.timeoutMs ?? 600_000;
  const deadline = Date.now() + timeoutMs;
  let interval = opts.intervalMs ?? 250;
  for (;;) {
    const record = await ok(client.GET('/v1/blobs/{blob_id}/parse/{parse_id}', { params: { path: { blob_id: blobId, parse_id: parseId } }, signal: opts.signal }));
    opts.onStatus?.(record);
    if (isFinished(record)) return record;
    const left = deadline - Date.now();
    if (left <= 0) throw new ParseTimeoutError(record, timeoutMs);
    await sleep(Math.min(interval, left), opts.signal);
    interval = Math.min(Math.round(interval * 1.5), opts.maxIntervalMs ?? 2000);
  }
}

export interface ParseOptions extends WaitOptions {
  /** Parse in the request (svc's limit: SVC_PARSE_SYNC_MAX_BYTES) instead of queueing it. */
  sync?: boolean;
  /** HTTPS URL that receives the signed parse.completed callback (queued parses only). */
  callbackUrl?: string;
  /** Queue and return the queued record without waiting. */
  noWait?: boolean;
}

/**
 * Parses a blob and returns the finished record: queued and polled by default (`onStatus` sees
 * queued, running, …), or in one call with `sync`. A failed parse is returned with status failed.
 */
export async function parseBlob(client: SvcClient, blobId: string, opts: ParseOptions = {}): Promise<ParseRecord> {
  const path = { blob_id: blobId };
  if (opts.sync) {
    const record = await ok(client.POST('/v1/blobs/{blob_id}/parse', { params: { path, query: { async: false } }, signal: opts.signal }));
    opts.onStatus?.(record);
    return record;
  }
  const queued = await ok(client.POST('/v1/blobs/{blob_id}/parse', {
    params: { path, query: { async: true } },
    ...(opts.callbackUrl ? { body: { callback_url: opts.callbackUrl } } : {}),
    signal: opts.signal,
  }));
  if (opts.noWait) {
    opts.onStatus?.(queued);
    return queued;
  }
  return waitForParse(client, blobId, queued.parse_id, opts);
}
