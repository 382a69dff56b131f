/**
 * What the API shows of a blob (list items and GET .../meta):
 *   blob_id, size_bytes, content_type, sha256 (hex of the bytes), filename (multipart file name or
 *   null), created_at, updated_at (ISO 8601), parse (latest parse: parse_id, status, created_at,
 *   completed_at; null when never parsed).
 */
import { iso } from '../../lib/clock';
import type { ParseSummary } from './ports';
import type { BlobRow } from './store';

export interface BlobView {
  blob_id: string;
  size_bytes: number;
  content_type: string;
  sha256: string;
  filename: string | null;
  created_at: string;
  updated_at: string;
  parse: ParseSummary | null;
}

export function blobView(row: BlobRow, parse?: ParseSummary): BlobView {
  return {
    blob_id: row.blob_id,
    size_bytes: Number(row.size_bytes),
    content_type: row.content_type,
    sha256: row.sha256,
    filename: row.filename,
    created_at: iso(Number(row.created_at)),
    updated_at: iso(Number(row.updated_at)),
    parse: parse ?? null,
  };
}
