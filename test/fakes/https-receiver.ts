/**
 * A loopback HTTPS server that receives parse callbacks, with a self-signed certificate made by
 * `openssl req -x509` at test time (SAN localhost and 127.0.0.1). A test trusts it by giving the
 * svc process NODE_EXTRA_CA_CERTS=<certPath>; an in-process app does not trust it (TLS failure).
 * It records every request (headers and exact raw body) and answers with the next status of
 * `statuses` (then 200), and can check a Stripe-style signature the way a receiver should.
 */
import { execFileSync } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ReceivedCall {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface HttpsReceiver {
  url: string;
  port: number;
  certPath: string;
  calls: ReceivedCall[];
  /** Statuses for the next calls, in order (then 200). */
  statuses: number[];
  close(): Promise<void>;
}

export function makeSelfSignedCert(dir: string): { keyPath: string; certPath: string } {
  const keyPath = join(dir, 'key.pem');
  const certPath = join(dir, 'cert.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyPath, '-out', certPath, '-days', '1',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
  return { keyPath, certPath };
}

export async function startHttpsReceiver(): Promise<HttpsReceiver> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-receiver-'));
  const { keyPath, certPath } = makeSelfSignedCert(dir);
  const calls: ReceivedCall[] = [];
  const statuses: number[] = [];
  const server: Server = createServer({ key: readFileSync(keyPath), cert: readFileSync(certPath) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      calls.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(statuses.shift() ?? 200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://localhost:${port}`, port, certPath, calls, statuses,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A receiver's check of `Svc-Signature: t=..,v1=..` over the raw body; undefined when valid. */
export function signatureProblem(secret: string, call: ReceivedCall, nowSeconds: number, toleranceSeconds = 300): string | undefined {
  const header = String(call.headers['svc-signature'] ?? '');
  const t = /(?:^|,)t=(\d+)/.exec(header)?.[1];
  const v1 = /(?:^|,)v1=([0-9a-f]{64})/.exec(header)?.[1];
  if (!t || !v1) return 'malformed';
  const expected = createHmac('sha256', secret).update(`${t}.${call.body}`).digest();
  if (!timingSafeEqual(expected, Buffer.from(v1, 'hex'))) return 'mismatch';
  if (Math.abs(nowSeconds - Number(t)) > toleranceSeconds) return 'expired';
  return undefined;
}
