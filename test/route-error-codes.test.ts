/**
 * Error codes that no other test pinned down (audit: every route has a test for each code it can
 * give), on both engines: GET /health when the database does not answer, GET and DELETE /mcp,
 * the validation codes of passport verify, the optional-auth signed download, replay of a parse
 * that is not the caller's, the body checks of the internal queue push route, and the codes of
 * refusals whose existing tests assert only the status. Every test asserts status and error_code.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { signPushMessage } from '../src/infra/queue';
import { csvText } from './fixtures/documents';
import { startBlobApp, type BlobApp } from './blobs-support';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

const QUEUE_SECRET = 'queue-secret';
const UNKNOWN_UUID = '00000000-0000-4000-8000-000000000000';
const codeOf = (r: { status: number; body: any }) => [r.status, r.body.error_code];

describe('GET /health when the database does not answer', () => {
  let h: BlobApp | undefined;
  afterAll(async () => h?.close());

  test('503 DATABASE_UNAVAILABLE once the app’s database handle is closed', async () => {
    h = await startBlobApp('fs');
    const ok = await h.request('GET', '/health');
    expect([ok.status, ok.body.status]).toEqual([200, 'ok']);
    expect(ok.body).not.toHaveProperty('redis'); // no REDIS_URL: the counters are in-process
    // The very handle the app uses; app.close() closes it again (a no-op) on the way out.
    await h.built.database.close();
    const down = await h.request('GET', '/health');
    expect(codeOf(down)).toEqual([503, 'DATABASE_UNAVAILABLE']);
    expect(down.body).toMatchObject({ status: 'degraded', version: ok.body.version, database: ok.body.database });
  });
});

describe('identity, MCP, admin and billing page', () => {
  let t: TestApp;
  let a: RegisteredAgent;
  beforeAll(async () => {
    t = await startTestApp();
    a = await t.registerAgent();
  });
  afterAll(async () => t?.close());

  test('GET and DELETE /mcp: 405 METHOD_NOT_ALLOWED with Allow: POST', async () => {
    for (const method of ['GET', 'DELETE'] as const) {
      const r = await t.request(method, '/mcp', { token: a.apiKey });
      expect(codeOf(r), method).toEqual([405, 'METHOD_NOT_ALLOWED']);
      expect(r.headers.allow, method).toBe('POST');
    }
  });

  test('POST /v1/auth/passport/verify: 422 CHALLENGE_ID_REQUIRED (missing, an object, over 64 characters)', async () => {
    const c = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
    expect(c.challenge_id).toEqual(expect.any(String));
    // A number would be coerced to a string (Fastify's default Ajv coerceTypes); an object is not.
    for (const challenge_id of [undefined, { id: c.challenge_id }, 'c'.repeat(65)]) {
      const r = await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: a.agentId, challenge_id, signature: 'AAAA' } });
      expect(codeOf(r), JSON.stringify(challenge_id)).toEqual([422, 'CHALLENGE_ID_REQUIRED']);
    }
  });

  test('POST /v1/auth/passport/verify: 422 INVALID_AGENT_ID (missing, not a UUID, an object)', async () => {
    const c = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
    for (const agent_id of [undefined, 'nope', `${a.agentId}x`, { id: a.agentId }]) {
      const r = await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id, challenge_id: c.challenge_id, signature: 'AAAA' } });
      expect(codeOf(r), JSON.stringify(agent_id)).toEqual([422, 'INVALID_AGENT_ID']);
    }
  });

  test('POST /v1/me/passport/revoke a second time: 409 PASSPORT_REVOKED', async () => {
    const c = await t.registerAgent();
    expect((await t.request('POST', '/v1/me/passport/revoke', { token: c.apiKey })).status).toBe(200);
    const twice = await t.request('POST', '/v1/me/passport/revoke', { token: c.apiKey });
    expect(codeOf(twice)).toEqual([409, 'PASSPORT_REVOKED']);
  });

  test('GET /admin/agents/{unknown or malformed id}: 404 AGENT_NOT_FOUND', async () => {
    for (const id of [UNKNOWN_UUID, 'not-a-uuid']) {
      const r = await t.request('GET', `/admin/agents/${id}`, { headers: { 'x-admin-key': 'test-admin-key' } });
      expect(codeOf(r), id).toEqual([404, 'AGENT_NOT_FOUND']);
    }
  });

  test('GET /billing/{unknown asset}: 404 ROUTE_NOT_FOUND', async () => {
    expect((await t.request('GET', '/billing/billing.js')).status).toBe(200);
    const r = await t.request('GET', '/billing/nope.js');
    expect(codeOf(r)).toEqual([404, 'ROUTE_NOT_FOUND']);
  });
});

describe('blobs, parse and the internal queue route', () => {
  let w: BlobApp;
  let a: { token: string; id: string };
  let b: { token: string; id: string };
  beforeAll(async () => {
    w = await startBlobApp('fs', { SVC_QUEUE_SECRET: QUEUE_SECRET, SVC_CALLBACK_REPLAY_ENABLED: 'true', SVC_BLOB_SIGNING_SECRET: 'sig-secret' });
    a = await w.agent('starter');
    b = await w.agent('starter');
  });
  afterAll(async () => w?.close());

  const csvBlob = async (token: string, tag: string) => {
    const up = await w.upload(token, csvText([['k'], [tag]]), 'text/csv');
    expect(up.status).toBe(201);
    return up.body.blob_id as string;
  };

  describe('GET /v1/blobs/{blob_id}/download (optional auth)', () => {
    test('a Bearer that is present but not valid: 401 INVALID_API_KEY, even with a valid signed URL', async () => {
      const id = await csvBlob(a.token, 'dl-401');
      const signed = await w.request('GET', `/v1/blobs/${id}/signed-url`, { token: a.token });
      expect(signed.status).toBe(200);
      const query = new URL(signed.body.url ?? signed.body.signed_url).search;
      expect((await w.request('GET', `/v1/blobs/${id}/download${query}`)).status).toBe(200);
      for (const authorization of ['Bearer svc_nope', `Bearer ${a.token}x`, 'Bearer', 'Basic abc']) {
        for (const q of ['', query]) {
          const r = await w.request('GET', `/v1/blobs/${id}/download${q}`, { headers: { authorization } });
          expect(codeOf(r), `${authorization} ${q}`).toEqual([401, 'INVALID_API_KEY']);
        }
      }
    });

    test("another agent's key without a signature: 404 BLOB_NOT_FOUND (the owner's key reads it)", async () => {
      const id = await csvBlob(a.token, 'dl-404');
      expect((await w.request('GET', `/v1/blobs/${id}/download`, { token: a.token })).status).toBe(200);
      const r = await w.request('GET', `/v1/blobs/${id}/download`, { token: b.token });
      expect(codeOf(r)).toEqual([404, 'BLOB_NOT_FOUND']);
      const withOwner = await w.request('GET', `/v1/blobs/${id}/download?agent_id=${a.id}`, { token: b.token });
      expect(codeOf(withOwner)).toEqual([404, 'BLOB_NOT_FOUND']);
    });

    test('a bad expires (not an integer, negative): 422 VALIDATION_FAILED', async () => {
      const id = await csvBlob(a.token, 'dl-422');
      for (const expires of ['soon', '-1', '1.5', '']) {
        for (const token of [undefined, a.token]) {
          const r = await w.request('GET', `/v1/blobs/${id}/download?agent_id=${a.id}&expires=${expires}&signature=abc`, { token });
          expect(codeOf(r), `expires=${expires} ${token ? 'with key' : 'no key'}`).toEqual([422, 'VALIDATION_FAILED']);
          expect(r.body.field).toBe('querystring.expires');
        }
      }
    });
  });

  describe('POST /v1/blobs/{blob_id}/parse', () => {
    test('callback_url without ?async=true: 422 VALIDATION_FAILED', async () => {
      const id = await csvBlob(a.token, 'cb-sync');
      for (const q of ['', '?async=false']) {
        const r = await w.request('POST', `/v1/blobs/${id}/parse${q}`, { token: a.token, body: { callback_url: 'https://example.com/hook' } });
        expect(codeOf(r), q).toEqual([422, 'VALIDATION_FAILED']);
        expect(r.body.field).toBe('body.callback_url');
      }
    });
  });

  describe('POST /v1/blobs/{blob_id}/parse/{parse_id}/replay', () => {
    // A parse that is not this agent's is 404 BLOB_NOT_FOUND (as GET .../parse/{parse_id}).
    test("another agent's parse and an unknown parse: 404 BLOB_NOT_FOUND", async () => {
      const id = await csvBlob(a.token, 'replay-a');
      const parsed = await w.request('POST', `/v1/blobs/${id}/parse`, { token: a.token });
      expect(parsed.status).toBe(200);
      const pid = parsed.body.parse_id as string;
      const own = await csvBlob(b.token, 'replay-b');
      const otherOfA = await csvBlob(a.token, 'replay-a2');
      const cases: [string, string, string][] = [
        ["b on a's blob and parse", b.token, `/v1/blobs/${id}/parse/${pid}/replay`],
        ["b on its own blob with a's parse", b.token, `/v1/blobs/${own}/parse/${pid}/replay`],
        ['a: unknown parse id', a.token, `/v1/blobs/${id}/parse/${UNKNOWN_UUID}/replay`],
        ["a: its parse under another of its blobs", a.token, `/v1/blobs/${otherOfA}/parse/${pid}/replay`],
        ['a: malformed parse id', a.token, `/v1/blobs/${id}/parse/not-a-uuid/replay`],
      ];
      for (const [what, token, url] of cases) {
        const r = await w.request('POST', url, { token });
        expect(codeOf(r), what).toEqual([404, 'BLOB_NOT_FOUND']);
      }
      // The owner reaches the parse itself (it has no callback_url to replay).
      const mine = await w.request('POST', `/v1/blobs/${id}/parse/${pid}/replay`, { token: a.token });
      expect(codeOf(mine)).toEqual([422, 'PARSE_CALLBACK_URL_MISSING']);
    });
  });

  describe('POST /internal/queue/parse (correctly signed)', () => {
    const push = (body: string) => w.request('POST', '/internal/queue/parse', {
      body, headers: { 'content-type': 'application/json', 'svc-queue-signature': signPushMessage(QUEUE_SECRET, body, w.clock.now()) },
    });

    test('a body that is not JSON: 400 INVALID_JSON', async () => {
      for (const body of ['not json', '{"parse_id":', '']) {
        const r = await push(body);
        expect(codeOf(r), JSON.stringify(body)).toEqual([400, 'INVALID_JSON']);
      }
    });

    test('parse_id missing, not a string or over 64 characters: 422 VALIDATION_FAILED', async () => {
      for (const msg of [{}, { parse_id: 42 }, { parse_id: null }, { parse_id: ['x'] }, { parse_id: 'p'.repeat(65) }, []]) {
        const r = await push(JSON.stringify(msg));
        expect(codeOf(r), JSON.stringify(msg).slice(0, 40)).toEqual([422, 'VALIDATION_FAILED']);
        expect(r.body.field).toBe('body.parse_id');
      }
    });

    test('a JSON body that is literally null: 422 VALIDATION_FAILED, as any other well-formed body of the wrong shape', async () => {
      for (const body of ['null', ' null\n']) {
        const r = await push(body);
        expect(codeOf(r), JSON.stringify(body)).toEqual([422, 'VALIDATION_FAILED']);
        expect(r.body.field).toBe('body.parse_id');
      }
    });

    test('an unknown parse (64 characters is still a valid length): 404 PARSE_JOB_NOT_FOUND', async () => {
      for (const parse_id of [UNKNOWN_UUID, 'p'.repeat(64)]) {
        const r = await push(JSON.stringify({ parse_id }));
        expect(codeOf(r), parse_id).toEqual([404, 'PARSE_JOB_NOT_FOUND']);
      }
    });
  });
});
