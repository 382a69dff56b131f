/**
 * Blob identifiers: `b_` + 16 lower-case hex characters, content-addressed per agent:
 *   blob_id = "b_" + first 16 hex of SHA-256("svc.blob.v1\n" + agent_id + "\n" + sha256(bytes))
 * The same bytes always get the same id for one agent (idempotent upload), while two agents
 * holding the same bytes get different ids, so an id says nothing about anyone else's files.
 */
import { createHash } from 'node:crypto';

export const BLOB_ID_PATTERN = '^b_[0-9a-f]{16}$';
const BLOB_ID_RE = new RegExp(BLOB_ID_PATTERN);

export const isBlobId = (s: unknown): s is string => typeof s === 'string' && BLOB_ID_RE.test(s);

export function blobIdFor(agentId: string, sha256: string): string {
  const h = createHash('sha256').update(`svc.blob.v1\n${agentId}\n${sha256}`).digest('hex');
  return `b_${h.slice(0, 16)}`;
}
