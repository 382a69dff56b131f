/**
 * The memory ledger's codes (docs/memory.md, "Versions and If-Match"):
 *
 * - Optimistic concurrency: GET and PUT /v1/memory/{key} answer the live version as a strong ETag
 *   (`"<version>"`). A PUT with `If-Match` writes only when the key's live version is one of the
 *   listed ETags (or, for `*`, when the key has a live value at all); otherwise 409
 *   MEMORY_LEDGER_VERSION_CONFLICT with the live version. The check is made inside the write's
 *   transaction, after the agent's writer lock: of concurrent PUTs with the same If-Match, one wins.
 * - MEMORY_LEDGER_UNAVAILABLE (503): on the memory routes, the ledger cannot be read or written:
 *   PostgreSQL out of reach (everywhere else that is DATABASE_UNAVAILABLE), or SQLite unable to
 *   write or read its file (disk full, I/O error, a read-only or missing file, locked past the
 *   busy timeout). The driver's message stays in the log; the answer carries request_id.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, handleError } from '../../http/errors';

/** What an If-Match header asks: any live version (`*`), or one of these versions. */
export type VersionPrecondition = { any: true } | { versions: number[] };

/** A version as its ETag: a strong entity tag holding the decimal version. */
export const etagOf = (version: number): string => `"${version}"`;

/**
 * Parses If-Match (RFC 9110 13.1.1): `*`, or a comma-separated list of entity tags. A weak tag
 * (W/"3") never matches (If-Match compares strongly); a tag that is not a version number matches no
 * version. Anything else is 422 VALIDATION_FAILED naming the header.
 */
export function parseIfMatch(header: string | string[] | undefined): VersionPrecondition | undefined {
  if (header === undefined) return undefined;
  const text = (Array.isArray(header) ? header.join(',') : header).trim();
  if (text === '*') return { any: true };
  const tags = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (tags.length === 0 || !tags.every((tag) => /^(W\/)?"[\x21\x23-\x7E\x80-\xFF]*"$/.test(tag))) {
    throw new ApiError(422, 'VALIDATION_FAILED', 'If-Match must be * or a list of entity tags such as "3" (the ETag a GET or PUT of this key answered)', { field: 'headers.if-match' });
  }
  const versions = tags.filter((tag) => !tag.startsWith('W/')).map((tag) => tag.slice(1, -1)).filter((v) => /^[1-9]\d{0,14}$/.test(v)).map(Number);
  return { versions };
}

/** Whether the live version (undefined: no live value) meets the precondition. */
export function meets(pre: VersionPrecondition, live: number | undefined): boolean {
  if (live === undefined) return false;
  return 'any' in pre ? true : pre.versions.includes(live);
}

export function versionConflict(key: string, pre: VersionPrecondition, live: number | undefined): ApiError {
  const wanted = 'any' in pre ? '*' : pre.versions.map(etagOf).join(', ');
  return new ApiError(409, 'MEMORY_LEDGER_VERSION_CONFLICT',
    live === undefined
      ? `If-Match ${wanted}: key "${key}" has no live value; nothing was written`
      : `If-Match ${wanted}: the live version of key "${key}" is ${live}; nothing was written (GET it again, then retry with If-Match: ${etagOf(live)})`,
    { key, current_version: live ?? null, current_etag: live === undefined ? null : etagOf(live) });
}

/** SQLite result codes that mean the file cannot be written or read (not a statement refused). */
const SQLITE_UNAVAILABLE = /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN|BUSY|LOCKED|NOTADB|CORRUPT|PROTOCOL)/;

/** The ledger unreachable, as MEMORY_LEDGER_UNAVAILABLE; undefined for any other error. */
export function ledgerUnavailable(err: unknown, requestId: string): ApiError | undefined {
  const e = err as { code?: unknown; publicStatus?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  if ((code === 'DATABASE_UNAVAILABLE' && e?.publicStatus === 503) || SQLITE_UNAVAILABLE.test(code)) {
    return new ApiError(503, 'MEMORY_LEDGER_UNAVAILABLE', 'The memory ledger cannot be read or written right now; try again shortly (a write cut off at its commit may have been stored: retry it with If-Match to be sure)', { request_id: requestId });
  }
  return undefined;
}

/** The memory routes' error handler: the ledger unreachable is MEMORY_LEDGER_UNAVAILABLE (logged), anything else as everywhere. */
export function ledgerErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const unavailable = ledgerUnavailable(err, request.id);
  if (unavailable) {
    request.log.error({ err }, 'memory ledger unavailable');
    return handleError(unavailable as unknown as FastifyError, request, reply);
  }
  return handleError(err, request, reply);
}
