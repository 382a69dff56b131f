/**
 * What svc answers to requests only a raw socket can send: repeated headers and bytes Node's HTTP
 * parser refuses before Fastify sees the request. Every answer is in the API's error format.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type TestApp } from './helpers/harness';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ listen: true });
});
afterAll(async () => t?.close());

/** Sends `head` (request line and headers, CRLF-separated, no final blank line) and reads the whole answer. */
function raw(head: string): Promise<{ status: number; headers: string; body: any }> {
  const { port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let data = '';
    socket.on('data', (d) => { data += d.toString('latin1'); });
    socket.on('error', reject);
    socket.on('close', () => {
      const [headers, ...rest] = data.split('\r\n\r\n');
      const body = rest.join('\r\n\r\n');
      let parsed: any = body;
      try { parsed = JSON.parse(body); } catch { /* not JSON */ }
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(headers)?.[1]), headers, body: parsed });
    });
    // Written, not ended: a client that half-closes may see its connection dropped before the answer.
    socket.write(`${head}\r\nConnection: close\r\n\r\n`, 'latin1');
  });
}

describe('raw HTTP', () => {
  test('two Authorization headers are refused whichever comes first: 401 INVALID_API_KEY', async () => {
    const a = await t.registerAgent();
    const one = await raw(`GET /v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.apiKey}`);
    expect(one.status).toBe(200);
    for (const pair of [[a.apiKey, 'svc_other'], ['svc_other', a.apiKey], [a.apiKey, a.apiKey]]) {
      const res = await raw(`GET /v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${pair[0]}\r\nauthorization: Bearer ${pair[1]}`);
      expect(res.status).toBe(401);
      expect(res.body.error_code).toBe('INVALID_API_KEY');
    }
  });

  test('a header Node\'s parser refuses is 400 BAD_REQUEST in the API format; oversized headers 431', async () => {
    const a = await t.registerAgent();
    const bad = await raw(`GET /v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.apiKey}\rX-Injected: 1`);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error_code: 'BAD_REQUEST' });
    expect(bad.body.message).toMatch(/not valid HTTP/);
    const folded = await raw(`GET /v1/me HTTP/1.1\r\nHost: x\r\nX-Long: a\r\n  folded`);
    expect(folded.body.error_code).toBe('BAD_REQUEST');
    const huge = await raw(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}`);
    expect(huge.status).toBe(431);
    expect(huge.body.error_code).toBe('HEADERS_TOO_LARGE');
  });
});
