/**
 * Async parsing end to end with real processes: svc runs as `tsx src/main.ts` (trusting the test's
 * self-signed receiver certificate through NODE_EXTRA_CA_CERTS, loopback allowed), posts the
 * signed parse.completed callback to a loopback HTTPS receiver that checks the signature, retries
 * a failed delivery, replays the same bytes and signature, and a job survives its process being
 * killed: once queued but not started, and once in the middle of running (lease taken over).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { csvText, knownPdf, pdfDocument } from './fixtures/documents';
import { signatureProblem, startHttpsReceiver, type HttpsReceiver } from './fakes/https-receiver';
import { createTestDatabase, type TestDatabase } from './helpers/engines';
import { exitOf, startServerProcess } from './helpers/process';
import { eventually } from './blobs-support';

let db: TestDatabase;
let receiver: HttpsReceiver;
let env: Record<string, string>;

beforeAll(async () => {
  db = await createTestDatabase();
  receiver = await startHttpsReceiver();
  env = {
    ...db.env, NODE_EXTRA_CA_CERTS: receiver.certPath, SVC_OUTBOUND_ALLOW_LOOPBACK: 'true', SVC_OUTBOUND_ALLOWED_PORTS: String(receiver.port),
    SVC_EMBEDDINGS: 'none', SVC_QUEUE_POLL_INTERVAL_MS: '100', SVC_CALLBACK_REPLAY_ENABLED: 'true', SVC_CALLBACK_RETRY_BASE_SECONDS: '1',
    SVC_QUEUE_LEASE_SECONDS: '5', SVC_PARSE_SYNC_MAX_BYTES: '1000',
  };
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await db?.close();
});

async function call(url: string, method: string, path: string, token?: string, body?: Buffer | object, type?: string) {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  let payload: Buffer | string | undefined;
  if (Buffer.isBuffer(body)) { payload = body; headers['content-type'] = type ?? 'application/octet-stream'; }
  else if (body) { payload = JSON.stringify(body); headers['content-type'] = 'application/json'; }
  const res = await fetch(`${url}${path}`, { method, headers, body: payload });
  const text = await res.text();
  let json: any = text;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body: json };
}

async function kill(p: Awaited<ReturnType<typeof startServerProcess>>, signal: NodeJS.Signals) {
  p.child.kill(signal);
  await exitOf(p.child);
}

describe('signed callbacks and restarts, through real processes', () => {
  test('delivered and verified; retried after a 500; replayed with the same bytes and signature', async () => {
    const p = await startServerProcess(env);
    try {
      const reg = await call(p.url, 'POST', '/v1/register', undefined, { agent_name: 'cb-agent', owner_identifier: 'cb-owner', agree_to_terms: true });
      const token = reg.body.api_key as string;
      const id = (await call(p.url, 'PUT', '/v1/blobs', token, Buffer.from(await pdfDocument(knownPdf)), 'application/pdf')).body.blob_id;
      const q = await call(p.url, 'POST', `/v1/blobs/${id}/parse?async=true`, token, { callback_url: `https://localhost:${receiver.port}/hook` });
      expect(q.status).toBe(202);
      const secret = q.body.callback_signing_secret as string;
      const first = await eventually(async () => receiver.calls[0], 30_000, 'callback');
      expect(first.path).toBe('/hook');
      expect(signatureProblem(secret, first, Date.now() / 1000)).toBeUndefined();
      expect(signatureProblem('whsec_wrong', first, Date.now() / 1000)).toBe('mismatch');
      const event = JSON.parse(first.body);
      expect(event).toMatchObject({ event: 'parse.completed', event_id: `evt_${q.body.parse_id}`, parse_id: q.body.parse_id, blob_id: id, status: 'complete' });
      expect(event.result.pages[1].text).toContain('lighthouse');
      expect(first.headers['svc-event-id']).toBe(`evt_${q.body.parse_id}`);
      const deliveries = await eventually(async () => {
        const d = await call(p.url, 'GET', `/v1/blobs/${id}/parse/${q.body.parse_id}/deliveries`, token);
        return d.body.total === 1 && d;
      }, 10_000);
      expect(deliveries.body.deliveries[0]).toMatchObject({ attempt_number: 1, status: 'success', http_status: 200, last_error: null });

      // A receiver answering 500 gets the same body again after the backoff, freshly signed.
      receiver.statuses.push(500);
      const q2 = await call(p.url, 'POST', `/v1/blobs/${id}/parse?async=true`, token, { callback_url: `https://localhost:${receiver.port}/again` });
      const [failedCall, retried] = await eventually(async () => {
        const calls = receiver.calls.filter((c) => c.path === '/again');
        return calls.length >= 2 && calls;
      }, 30_000, 'retry');
      expect(retried.body).toBe(failedCall.body);
      expect(signatureProblem(secret, retried, Date.now() / 1000)).toBeUndefined();
      const d2 = await eventually(async () => {
        const d = await call(p.url, 'GET', `/v1/blobs/${id}/parse/${q2.body.parse_id}/deliveries`, token);
        return d.body.total === 2 && d;
      }, 10_000);
      expect(d2.body.deliveries.map((d: any) => [d.attempt_number, d.status, d.http_status])).toEqual([[2, 'success', 200], [1, 'failed', 500]]);

      // Replay: the stored body and the latest signature, byte for byte.
      const replay = await call(p.url, 'POST', `/v1/blobs/${id}/parse/${q.body.parse_id}/replay`, token);
      expect(replay.status).toBe(200);
      expect(replay.body.delivery).toMatchObject({ attempt_number: 2, trigger: 'replay', status: 'success', http_status: 200 });
      const replayed = receiver.calls.filter((c) => c.path === '/hook');
      expect(replayed).toHaveLength(2);
      expect(replayed[1].body).toBe(replayed[0].body);
      expect(replayed[1].headers['svc-signature']).toBe(replayed[0].headers['svc-signature']);
      expect(replayed[1].headers['svc-replay']).toBe('true');
    } finally {
      await kill(p, 'SIGTERM');
    }
  }, 120_000);

  test('a queued job survives a crash before it starts, and a running one is taken over after its lease', async () => {
    // Instance 1 has no worker: the job waits in the table; the process is killed.
    const p1 = await startServerProcess({ ...env, SVC_QUEUE_CONCURRENCY: '0' });
    const reg = await call(p1.url, 'POST', '/v1/register', undefined, { agent_name: 'crash-agent', owner_identifier: 'crash-owner', agree_to_terms: true });
    const token = reg.body.api_key as string;
    const small = (await call(p1.url, 'PUT', '/v1/blobs', token, Buffer.from(csvText([['k', 'v'], ['a', '1']])), 'text/csv')).body.blob_id;
    const queued = await call(p1.url, 'POST', `/v1/blobs/${small}/parse?async=true`, token, { callback_url: `https://localhost:${receiver.port}/crash` });
    expect(queued.status).toBe(202);
    const rows = Array.from({ length: 240_000 }, (_, i) => [i, `customer number ${i}`, `city ${i % 97}`, (i * 37) % 1000]);
    const big = (await call(p1.url, 'PUT', '/v1/blobs', token, Buffer.from(csvText(rows)), 'text/csv')).body.blob_id;
    await kill(p1, 'SIGKILL');

    // Instance 2 runs the queued job, and starts the big one; it is killed while that one runs.
    const p2 = await startServerProcess(env);
    const done = await eventually(async () => {
      const s = await call(p2.url, 'GET', `/v1/blobs/${small}/parse/${queued.body.parse_id}`, token);
      return s.body.status === 'complete' && s;
    }, 30_000, 'queued job after restart');
    expect(done.body.result.rows).toEqual([['a', '1']]);
    await eventually(async () => receiver.calls.find((c) => c.path === '/crash'), 20_000, 'callback after restart');
    const running = await call(p2.url, 'POST', `/v1/blobs/${big}/parse?async=true`, token);
    await eventually(async () => (await call(p2.url, 'GET', `/v1/blobs/${big}/parse/${running.body.parse_id}`, token)).body.status === 'running', 20_000, 'running');
    await kill(p2, 'SIGKILL');

    // Instance 3 takes the job over once the dead instance's lease (5 s) has run out.
    const p3 = await startServerProcess(env);
    try {
      const after = await eventually(async () => {
        const s = await call(p3.url, 'GET', `/v1/blobs/${big}/parse/${running.body.parse_id}`, token);
        return s.body.status === 'complete' && s;
      }, 60_000, 'taken over');
      expect(after.body.result.metadata.row_count).toBe(240_000);
    } finally {
      await kill(p3, 'SIGTERM');
    }
  }, 180_000);
});
