/**
 * Blobs: per-agent names for content-addressed bytes (see docs/blobs.md).
 *
 * Upload: stream to the store's staging area while hashing (never buffered; cut off past
 * SVC_BLOB_MAX_BYTES → 413 BLOB_TOO_LARGE) → derive the agent's blob_id → one transaction records
 * the blob and grows the agent's counter only if it stays within the tier cap (413
 * BLOB_STORAGE_LIMIT) → commit the bytes to their content address. Same bytes again: 200, same id.
 * Delete: soft (tombstone + counter shrinks at once); the bytes go later, via sweeper.ts.
 */
import type { Readable } from 'node:stream';
import { ApiError } from '../../http/errors';
import { BlobNotFoundError, BlobTooLargeError, type BlobRange, type BlobStore } from '../../infra/blobstore';
import { iso, type Clock } from '../../lib/clock';
import { tierOf } from '../../lib/tiers';
import { blobIdFor, isBlobId } from './ids';
import type { BlobDeletedListener, ParseSummaryPort, TierResolver } from './ports';
import { multipartRanges, parseRange } from './range';
import type { UrlSigner } from './signed-url';
import { ContentBusyError, StorageLimitError, type BlobRecords, type BlobRow } from './store';
import { blobView, type BlobView } from './views';

export interface BlobServiceDeps {
  records: BlobRecords;
  store: BlobStore;
  clock: Clock;
  signer: UrlSigner;
  baseUrl: string;
  upgradeUrl: string;
  maxBytes: number;
  signedUrlDefaultSeconds: number;
  signedUrlMaxSeconds: number;
  tierFor?: TierResolver;
  parses?: () => ParseSummaryPort | undefined;
  /** How long an upload waits for the sweeper to finish removing the same content (ms). */
  staleClaimMs?: number;
}

export interface Caller {
  agentId: string;
  tier: string;
}

export interface UploadInput {
  body: Readable;
  contentType: string | undefined;
  filename?: string | null;
  /** Content-Length when the client sent one: lets a too-large upload be refused before reading. */
  declaredBytes?: number;
}

export interface Download {
  status: 200 | 206 | 304 | 416;
  headers: Record<string, string>;
  body?: Readable;
  error?: ApiError;
}

const CONTENT_TYPE_RE = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+(\s*;\s*[a-z0-9!#$&^_.+-]+=("[^"\r\n]*"|[^;\s"]+))*$/i;
const notFound = (blobId: string) => new ApiError(404, 'BLOB_NOT_FOUND', `No blob ${blobId}`, { blob_id: blobId });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `Text/CSV; Charset=UTF-8` → `text/csv; charset=UTF-8`; missing → application/octet-stream. */
export function normaliseContentType(raw: string | undefined): string {
  const v = (raw ?? '').trim();
  if (!v) return 'application/octet-stream';
  if (v.length > 255 || !CONTENT_TYPE_RE.test(v)) {
    throw new ApiError(422, 'BLOB_CONTENT_TYPE_INVALID', 'Content-Type must be a media type such as application/pdf (at most 255 characters)');
  }
  const [type, ...params] = v.split(';');
  return [type!.trim().toLowerCase(), ...params.map((p) => p.trim().replace(/^[^=]+/, (k) => k.toLowerCase()))].join('; ');
}

/** Entity tags of an If-None-Match list, compared weakly (RFC 9110 §13.1.2, §8.8.3.2). */
function noneMatch(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  const tags = header.match(/(?:W\/)?"[^"]*"/g) ?? [];
  return tags.some((t) => t.replace(/^W\//, '') === etag);
}

/** If-Range (RFC 9110 §13.1.5): a strong entity tag equal to ours, or exactly our Last-Modified. */
function ifRangeHolds(header: string, etag: string, lastModified: string): boolean {
  const v = header.trim();
  if (v.startsWith('"') || v.startsWith('W/')) return v === etag;
  const when = Date.parse(v);
  return Number.isFinite(when) && when === Date.parse(lastModified);
}

/** RFC 6266: a plain-ASCII `filename` for old agents, and the exact name in `filename*` (RFC 8187). */
export function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\w.\- ]/g, '_');
  if (ascii === name) return `attachment; filename="${ascii}"`;
  let ext = '';
  for (const b of Buffer.from(name, 'utf8')) {
    const c = String.fromCharCode(b);
    ext += /[A-Za-z0-9!#$&+\-.^_`|~]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return `attachment; filename="${ascii}"; filename*=UTF-8''${ext}`;
}

export function createBlobService(deps: BlobServiceDeps) {
  const { records, store, clock } = deps;
  const staleClaimMs = deps.staleClaimMs ?? 60_000;
  const deleted: BlobDeletedListener[] = [];
  const tierFor: TierResolver = deps.tierFor ?? (async (_a, stored) => tierOf(stored));
  const tooLarge = () => new ApiError(413, 'BLOB_TOO_LARGE', `A single blob may be at most ${deps.maxBytes} bytes`, { max_bytes: deps.maxBytes });

  async function summaries(agentId: string, ids: string[]) {
    const port = deps.parses?.();
    return port && ids.length > 0 ? port.latest(agentId, ids) : new Map();
  }

  async function active(agentId: string, blobId: string): Promise<BlobRow> {
    if (!isBlobId(blobId)) throw notFound(blobId);
    const row = await records.find(agentId, blobId);
    if (!row) throw notFound(blobId);
    return row;
  }

  async function record(caller: Caller, row: Omit<Parameters<BlobRecords['add']>[0], 'capBytes' | 'now' | 'staleClaimMs'>) {
    const tier = await tierFor(caller.agentId, caller.tier);
    const deadline = clock.now() + staleClaimMs;
    for (let wait = 20; ; wait = Math.min(500, wait * 2)) {
      try {
        return await records.add({ ...row, capBytes: tier.blobStorageBytes, now: clock.now(), staleClaimMs });
      } catch (e) {
        if (e instanceof StorageLimitError) {
          throw new ApiError(413, 'BLOB_STORAGE_LIMIT',
            `Storing ${row.sizeBytes} more bytes would exceed the ${tier.label} blob storage cap of ${e.capBytes} bytes (${e.usedBytes} used)`,
            { limit_bytes: e.capBytes, used_bytes: e.usedBytes, upgrade_url: deps.upgradeUrl });
        }
        // The sweeper is removing this very content; it takes milliseconds, so wait for it.
        if (!(e instanceof ContentBusyError) || Date.now() > deadline) throw e;
        await sleep(wait);
      }
    }
  }

  return {
    onDeleted(listener: BlobDeletedListener): void {
      deleted.push(listener);
    },

    async upload(caller: Caller, input: UploadInput): Promise<{ created: boolean; blob: Pick<BlobView, 'blob_id' | 'size_bytes' | 'content_type'> & { sha256: string } }> {
      const contentType = normaliseContentType(input.contentType);
      if (input.declaredBytes !== undefined && input.declaredBytes > deps.maxBytes) throw tooLarge();
      let staged;
      try {
        staged = await store.stage(input.body, deps.maxBytes);
      } catch (e) {
        if (e instanceof BlobTooLargeError) throw tooLarge();
        throw e;
      }
      const blobId = blobIdFor(caller.agentId, staged.sha256);
      let added;
      try {
        added = await record(caller, {
          agentId: caller.agentId, blobId, sha256: staged.sha256, sizeBytes: staged.sizeBytes, contentType, filename: input.filename ?? null,
        });
      } catch (e) {
        await staged.discard();
        throw e;
      }
      try {
        await staged.commit();
      } catch (e) {
        if (added.created) await records.rollbackAdd(caller.agentId, blobId, clock.now());
        throw e;
      }
      const r = added.row;
      return { created: added.created, blob: { blob_id: r.blob_id, size_bytes: Number(r.size_bytes), content_type: r.content_type, sha256: r.sha256 } };
    },

    /** The active blob row (parse reads it), or 404 BLOB_NOT_FOUND. */
    find: (agentId: string, blobId: string) => active(agentId, blobId),

    withLocalFile: <T>(sha256: string, fn: (path: string) => Promise<T>) => store.withLocalFile(sha256, fn),

    /**
     * Plans the answer to a download without holding the bytes. Conditional requests follow
     * RFC 9110 §13.2.2: If-None-Match first (weak comparison; 304 without a body), then If-Range
     * (strong comparison; a validator that does not match sends the whole blob), then Range.
     * `head` answers with the headers of the GET and opens no stream (Range is not defined for HEAD).
     */
    async download(agentId: string, blobId: string, h: { range?: string; ifNoneMatch?: string; ifRange?: string; head?: boolean }): Promise<Download> {
      const row = await active(agentId, blobId);
      const size = Number(row.size_bytes);
      const etag = `"${row.sha256}"`;
      const lastModified = new Date(Number(row.created_at)).toUTCString();
      const headers: Record<string, string> = {
        'accept-ranges': 'bytes',
        etag,
        'last-modified': lastModified,
        'cache-control': 'private, max-age=0, must-revalidate',
        // Bytes are the agent's, not ours: never let a browser render them on this origin.
        'x-content-type-options': 'nosniff',
        'content-security-policy': "default-src 'none'; sandbox",
        'content-disposition': contentDisposition(row.filename ?? row.blob_id),
      };
      if (h.ifNoneMatch !== undefined && noneMatch(h.ifNoneMatch, etag)) return { status: 304, headers };
      if (h.head) return { status: 200, headers: { ...headers, 'content-type': row.content_type, 'content-length': String(size) } };
      const range = h.range !== undefined && (h.ifRange === undefined || ifRangeHolds(h.ifRange, etag, lastModified)) ? h.range : undefined;
      const read = async (range?: BlobRange) => {
        try {
          return await store.read(row.sha256, range);
        } catch (e) {
          if (e instanceof BlobNotFoundError) throw notFound(blobId); // upload still committing, or bytes lost
          throw e;
        }
      };
      const wanted = parseRange(range, size);
      if (wanted.kind === 'unsatisfiable' || wanted.kind === 'too_many') {
        const message = wanted.kind === 'too_many'
          ? `At most 16 ranges per request (${wanted.count} asked)`
          : `No requested range starts inside the blob of ${size} bytes`;
        return { status: 416, headers: { ...headers, 'content-range': `bytes */${size}` }, error: new ApiError(416, 'RANGE_NOT_SATISFIABLE', message, { size_bytes: size }) };
      }
      if (wanted.kind === 'none') {
        return { status: 200, headers: { ...headers, 'content-type': row.content_type, 'content-length': String(size) }, body: await read() };
      }
      if (wanted.ranges.length === 1) {
        const r = wanted.ranges[0]!;
        return {
          status: 206,
          headers: { ...headers, 'content-type': row.content_type, 'content-length': String(r.end - r.start + 1), 'content-range': `bytes ${r.start}-${r.end}/${size}` },
          body: await read(r),
        };
      }
      const m = multipartRanges(wanted.ranges, size, row.content_type, read);
      return { status: 206, headers: { ...headers, 'content-type': m.contentType, 'content-length': String(m.contentLength) }, body: m.body };
    },

    async list(agentId: string, page: number, perPage: number) {
      const { rows, total } = await records.list(agentId, (page - 1) * perPage, perPage);
      const parses = await summaries(agentId, rows.map((r) => r.blob_id));
      return { status: 'success' as const, blobs: rows.map((r) => blobView(r, parses.get(r.blob_id))), total, page, per_page: perPage };
    },

    async meta(agentId: string, blobId: string) {
      const row = await active(agentId, blobId);
      const parses = await summaries(agentId, [blobId]);
      return { status: 'success' as const, ...blobView(row, parses.get(blobId)) };
    },

    async signedUrl(agentId: string, blobId: string, expiresIn: number | undefined) {
      await active(agentId, blobId);
      const seconds = expiresIn ?? deps.signedUrlDefaultSeconds;
      // Rounded up to the next whole second: the URL lives at least `expires_in` seconds, never less.
      const expires = Math.ceil((clock.now() + seconds * 1000) / 1000);
      const q = new URLSearchParams({ agent_id: agentId, expires: String(expires), signature: deps.signer.signature(agentId, blobId, expires) });
      return {
        status: 'success' as const, blob_id: blobId, url: `${deps.baseUrl}/v1/blobs/${blobId}/download?${q}`,
        expires_in: seconds, expires_at: iso(expires * 1000),
      };
    },

    /** Soft delete. Unknown, foreign or already deleted well-formed ids are a silent no-op (204 either way). */
    async remove(agentId: string, blobId: string): Promise<void> {
      if (!isBlobId(blobId)) throw notFound(blobId);
      const row = await records.softDelete(agentId, blobId, clock.now());
      if (row) for (const l of deleted) await l(agentId, blobId);
    },

    usage: (agentId: string) => records.usage(agentId),
  };
}

export type BlobService = ReturnType<typeof createBlobService>;
