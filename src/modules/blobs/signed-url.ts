/**
 * Signed read URLs: GET /v1/blobs/{blob_id}/download?agent_id=<uuid>&expires=<unix s>&signature=<hex>
 * reads the bytes without an API key until `expires`.
 *   signature = hex HMAC-SHA256(secret, "svc.blob.signed_url.v1\n" + agent_id + "\n" + blob_id + "\n" + expires)
 * The secret is SVC_BLOB_SIGNING_SECRET (the same on every instance), or a random one per
 * process when unset (URLs then die with the process). Any change to the three signed fields
 * breaks the signature; deleting the blob makes its URLs answer 404 at once.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export type SignedUrlCheck = 'ok' | 'invalid' | 'expired';

export interface UrlSigner {
  signature(agentId: string, blobId: string, expires: number): string;
  check(agentId: string, blobId: string, expires: number, signature: string, nowMs: number): SignedUrlCheck;
}

export function createUrlSigner(secret: string | undefined): UrlSigner {
  const key = secret ?? randomBytes(32).toString('hex');
  const mac = (agentId: string, blobId: string, expires: number) =>
    createHmac('sha256', key).update(`svc.blob.signed_url.v1\n${agentId}\n${blobId}\n${expires}`).digest();
  return {
    signature: (a, b, e) => mac(a, b, e).toString('hex'),
    check(agentId, blobId, expires, signature, nowMs) {
      if (!/^[0-9a-f]{64}$/.test(signature)) return 'invalid';
      if (!timingSafeEqual(Buffer.from(signature, 'hex'), mac(agentId, blobId, expires))) return 'invalid';
      return nowMs >= expires * 1000 ? 'expired' : 'ok';
    },
  };
}
