import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export const sha256hex = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

export const hmacHex = (secret: string | Buffer, data: string | Buffer): string =>
  createHmac('sha256', secret).update(data).digest('hex');

/** Constant-time string comparison (compares digests so lengths never leak). */
export function safeEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db) && a.length === b.length;
}
