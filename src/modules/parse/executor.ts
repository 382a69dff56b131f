/**
 * Runs the document parser on a stored blob: the bytes as a local file (the fs store's own file,
 * or a temporary copy of an S3 object), parsed in the parser's isolated pool under its limits.
 * Whatever the file holds, the outcome is a result or a failure with a reason; a failure of the
 * byte store (S3 down...) throws. The result arrives as JSON text serialized in the parser process
 * (it is stored and answered as JSON), with its chunks as objects for the search index. Reason 'internal' (the parser process died, the pool closed) is
 * ours rather than the file's: async jobs retry it, sync parses report it and refund the quota.
 */
import { isParseFailure, type Chunk, type DocumentParser } from '../../infra/parsers';
import type { BlobsPort } from './ports';

export interface ParseFailureInfo { code: string; reason: string; message: string }

/** A result as its JSON text (what is stored and answered) and its chunks (what search stores). */
export type ParseOutcome = { ok: true; json: string; chunks: Chunk[] } | { ok: false; failure: ParseFailureInfo };

export async function parseBlob(
  deps: { blobs: BlobsPort; parser: DocumentParser },
  blob: { sha256: string; content_type: string },
  owner: string,
): Promise<ParseOutcome> {
  try {
    const { json, chunks } = await deps.blobs.withLocalFile(blob.sha256, (path) => deps.parser.parseToJson({ path, owner }, blob.content_type));
    return { ok: true, json, chunks };
  } catch (e) {
    if (isParseFailure(e)) return { ok: false, failure: { code: e.code, reason: e.reason, message: e.message } };
    throw e;
  }
}
