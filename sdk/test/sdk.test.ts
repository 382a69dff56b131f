/**
 * The SDK against a real svc (buildApp in process on SQLite, a loopback port, real clock): typed
 * calls and errors, passport sessions and signed amends (signatures also checked by openssl), the
 * async parse helper, the directory and list walkers, and streamed uploads and downloads.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  blobs, collect, createSvcClient, directory, directoryPages, dispositionFilename, downloadBlob, generatePassportKeys, memoryKeys, ok,
  parseBlob, passportSession, ParseTimeoutError, safeFilename, signedAmend, signRequest, SvcError, SvcProtocolError, uploadBlob, waitForParse, type SvcClient,
} from '../src/index';
import { startSvc, type Svc } from './svc-server';

let svc: Svc;
let work: string;

interface Agent { client: SvcClient; agentId: string; apiKey: string; privateKeyPem: string; publicKeyPem: string }

async function register(name = `sdk-${Math.random().toString(36).slice(2, 10)}`): Promise<Agent> {
  const keys = generatePassportKeys();
  const r = await ok(createSvcClient({ baseUrl: svc.url }).POST('/v1/register', {
    body: { agent_name: name, owner_identifier: 'sdk@example.test', agree_to_terms: true, passport_public_key: keys.publicKeyPem },
  }));
  return { client: createSvcClient({ baseUrl: svc.url, apiKey: r.api_key }), agentId: r.agent_id, apiKey: r.api_key, ...keys };
}

function opensslVerifies(publicKeyPem: string, payload: string, signatureB64: string): boolean {
  const dir = mkdtempSync(join(tmpdir(), 'svc-sdk-verify-'));
  try {
    writeFileSync(join(dir, 'pub.pem'), publicKeyPem);
    writeFileSync(join(dir, 'payload.bin'), payload);
    writeFileSync(join(dir, 'sig.bin'), Buffer.from(signatureB64, 'base64'));
    execFileSync('openssl', ['pkeyutl', '-verify', '-pubin', '-inkey', join(dir, 'pub.pem'), '-rawin', '-in', join(dir, 'payload.bin'), '-sigfile', join(dir, 'sig.bin')], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

beforeAll(async () => {
  svc = await startSvc();
  work = mkdtempSync(join(tmpdir(), 'svc-sdk-files-'));
});
afterAll(async () => {
  await svc?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('client', () => {
  test('typed calls with the key as Bearer; ok() returns the body; a refusal is an SvcError with svc\'s code and status', async () => {
    const a = await register();
    const me = await ok(a.client.GET('/v1/me'));
    expect(me.agent_id).toBe(a.agentId);
    expect(me.authenticated_with.kind).toBe('root');
    const put = await ok(a.client.PUT('/v1/memory/{key}', { params: { path: { key: 'sdk.one' } }, body: { value: { n: 1 }, importance: 'high' } }));
    expect(put).toMatchObject({ key: 'sdk.one', version: 1 });
    // If-Match through the typed header parameter: the stale version is refused.
    const stale = await a.client.PUT('/v1/memory/{key}', { params: { path: { key: 'sdk.one' }, header: { 'if-match': '"7"' } }, body: { value: 2 } });
    expect(stale.response.status).toBe(409);
    await expect(ok(stale)).rejects.toMatchObject({ name: 'SvcError', status: 409, errorCode: 'MEMORY_LEDGER_VERSION_CONFLICT' });
    await expect(ok(a.client.GET('/v1/memory/{key}', { params: { path: { key: 'absent' } } }))).rejects.toMatchObject({ status: 404, errorCode: 'MEMORY_KEY_NOT_FOUND' });
    const anonymous = createSvcClient({ baseUrl: `${svc.url}/` });
    const e = await ok(anonymous.GET('/v1/me')).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(SvcError);
    expect(e).toMatchObject({ status: 401, errorCode: 'INVALID_API_KEY' });
    expect((e as SvcError).body).toMatchObject({ error_code: 'INVALID_API_KEY' });
    const sent = svc.requests.filter((r) => r.url === '/v1/me');
    expect(sent.map((r) => r.headers.authorization)).toEqual([`Bearer ${a.apiKey}`, undefined]);
    expect(sent[0].headers['user-agent']).toMatch(/^svc-sdk\//);
  });
});

/** A client that also keeps the JSON answers of the challenge route (to rebuild the signed bytes independently). */
function recordingClient(apiKey?: string): { client: SvcClient; challenges: Array<Record<string, string>> } {
  const challenges: Array<Record<string, string>> = [];
  const client = createSvcClient({
    baseUrl: svc.url, apiKey,
    fetch: async (req) => {
      const res = await fetch(req);
      if (req.url.endsWith('/v1/auth/passport/challenge')) challenges.push(await res.clone().json() as Record<string, string>);
      return res;
    },
  });
  return { client, challenges };
}

describe('passport', () => {
  test('passportSession: a challenge signed locally (openssl verifies the signature), exchanged for a session token that works as a key; the private key is never sent', async () => {
    const a = await register();
    const from = svc.requests.length;
    const { client, challenges } = recordingClient();
    const session = await passportSession(client, { agentId: a.agentId, privateKey: a.privateKeyPem });
    expect(session.session_token).toMatch(/^svc_session_/);
    expect(session).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
    const me = await ok(createSvcClient({ baseUrl: svc.url, apiKey: session.session_token }).GET('/v1/me'));
    expect(me.agent_id).toBe(a.agentId);
    const sent = svc.requests.slice(from);
    expect(sent.map((r) => `${r.method} ${r.url}`)).toEqual(['POST /v1/auth/passport/challenge', 'POST /v1/auth/passport/verify', 'GET /v1/me']);
    const secret = a.privateKeyPem.split('\n')[1];
    for (const r of sent) expect(JSON.stringify(r)).not.toContain(secret);
    const c = challenges[0];
    const bytes = ['svc.passport.challenge.v1', `agent_id:${a.agentId}`, `challenge_id:${c.challenge_id}`, `nonce:${c.challenge_nonce}`, `issued_at:${c.issued_at}`, `expires_at:${c.expires_at}`].join('\n');
    const verify = JSON.parse(sent[1].body) as { signature: string; challenge_id: string };
    expect(verify.challenge_id).toBe(c.challenge_id);
    expect(opensslVerifies(a.publicKeyPem, bytes, verify.signature)).toBe(true);
  });

  test('a challenge answer whose sign_payload is not its own fields\' bytes is not signed, and nothing is sent to verify', async () => {
    const a = await register();
    const from = svc.requests.length;
    const tampering = createSvcClient({
      baseUrl: svc.url,
      fetch: async (req) => {
        const res = await fetch(req);
        if (!req.url.endsWith('/v1/auth/passport/challenge')) return res;
        const body = await res.json() as Record<string, string>;
        body.sign_payload = `svc.custody.transfer.v1\nagent_id:${a.agentId}\nchallenge_id:${body.challenge_id}\nnonce:${body.challenge_nonce}\ncontent_sha256:${'0'.repeat(64)}`;
        return new Response(JSON.stringify(body), { status: res.status, headers: { 'content-type': 'application/json' } });
      },
    });
    await expect(passportSession(tampering, { agentId: a.agentId, privateKey: a.privateKeyPem })).rejects.toBeInstanceOf(SvcProtocolError);
    expect(svc.requests.slice(from).map((r) => r.url)).toEqual(['/v1/auth/passport/challenge']);
  });

  test('a key that is not the passport\'s: 401 PASSPORT_SIGNATURE_INVALID as an SvcError', async () => {
    const a = await register();
    const other = generatePassportKeys();
    await expect(passportSession(a.client, { agentId: a.agentId, privateKey: other.privateKeyPem })).rejects.toMatchObject({ status: 401, errorCode: 'PASSPORT_SIGNATURE_INVALID' });
  });

  test('signRequest / signedAmend: policy-binding amends svc accepts, over the documented bytes (openssl verifies); a body sent twice is a spent challenge', async () => {
    const a = await register();
    const { client, challenges } = recordingClient(a.apiKey);
    const content = { binding_type: 'tool_allow_list', params: { allowed_tools: ['svc_search', 'svc_memory'] } };
    const signed = await signRequest(client, { scheme: 'svc.policy_binding.amend.v1', agentId: a.agentId, privateKey: a.privateKeyPem, content });
    const c = challenges[0];
    // RFC 8785 by hand: keys sorted, no whitespace.
    const digest = createHash('sha256').update('{"binding_type":"tool_allow_list","params":{"allowed_tools":["svc_search","svc_memory"]}}').digest('hex');
    const bytes = ['svc.policy_binding.amend.v1', `agent_id:${a.agentId}`, `challenge_id:${c.challenge_id}`, `nonce:${c.challenge_nonce}`, `content_sha256:${digest}`].join('\n');
    expect(signed.sign_payload).toBe(bytes);
    expect(signed.challenge_id).toBe(c.challenge_id);
    expect(opensslVerifies(a.publicKeyPem, bytes, signed.signature)).toBe(true);
    const first = await ok(a.client.POST('/v1/me/policy-bindings/amend', { body: { ...content, challenge_id: signed.challenge_id, passport_signature: signed.signature } as never }));
    expect(first.binding.params).toEqual(content.params);

    const narrower = { binding_type: 'tool_allow_list', params: { allowed_tools: ['svc_memory'] } };
    const body = await signedAmend(a.client, { scheme: 'svc.policy_binding.amend.v1', agentId: a.agentId, privateKey: a.privateKeyPem, content: narrower });
    expect(Object.keys(body).sort()).toEqual(['binding_type', 'challenge_id', 'params', 'passport_signature']);
    const second = await ok(a.client.POST('/v1/me/policy-bindings/amend', { body: body as never }));
    expect(second.binding.params).toEqual(narrower.params);
    await expect(ok(a.client.POST('/v1/me/policy-bindings/amend', { body: body as never }))).rejects.toMatchObject({ status: 409, errorCode: 'CHALLENGE_ALREADY_USED' });
    // A signature over other content, sent with this content: refused.
    const other = await signRequest(a.client, { scheme: 'svc.policy_binding.amend.v1', agentId: a.agentId, privateKey: a.privateKeyPem, content: narrower });
    await expect(ok(a.client.POST('/v1/me/policy-bindings/amend', { body: { ...content, challenge_id: other.challenge_id, passport_signature: other.signature } as never })))
      .rejects.toMatchObject({ status: 401, errorCode: 'PASSPORT_SIGNATURE_INVALID' });
  });
});

describe('parsing', () => {
  test('parseBlob: queued, followed (onStatus sees each record) until complete with the result; --sync in one call', async () => {
    const a = await register();
    const up = await uploadBlob(a.client, { data: Buffer.from('name,age\nann,3\nbob,4\n'), filename: 'people.csv' });
    expect(up).toMatchObject({ content_type: 'text/csv', created: true });
    const seen: string[] = [];
    const done = await parseBlob(a.client, up.blob_id, { onStatus: (r) => seen.push(r.status) });
    expect(done.status).toBe('complete');
    expect(done.mode).toBe('async');
    expect(done.result?.rows).toEqual([['ann', '3'], ['bob', '4']]);
    expect(seen[seen.length - 1]).toBe('complete');
    expect(seen.length).toBeGreaterThanOrEqual(1);
    const polls = svc.requests.filter((r) => r.method === 'GET' && r.url === `/v1/blobs/${up.blob_id}/parse/${done.parse_id}`);
    expect(polls).toHaveLength(seen.length);
    const sync = await parseBlob(a.client, up.blob_id, { sync: true });
    expect(sync).toMatchObject({ status: 'complete', mode: 'sync' });
    expect(sync.result?.header).toEqual(['name', 'age']);
  });

  test('a broken file: the parse is returned failed (not thrown), with its reason', async () => {
    const a = await register();
    const up = await uploadBlob(a.client, { data: Buffer.from('this is not a PDF at all'), filename: 'broken.pdf' });
    expect(up).toMatchObject({ content_type: 'application/pdf' });
    const failed = await parseBlob(a.client, up.blob_id);
    expect(failed.status).toBe('failed');
    expect(failed.failure_reason).toBe('corrupt');
    expect(typeof failed.error).toBe('string');
  });

  test('waitForParse: polls with growing pauses until done; past the timeout a ParseTimeoutError with the last record; a refusal is an SvcError', async () => {
    const polls: number[] = [];
    let n = 0;
    const fake = createSvcClient({
      baseUrl: 'http://svc.invalid',
      fetch: async () => {
        polls.push(Date.now());
        n++;
        return new Response(JSON.stringify({ parse_id: 'p', status: n < 4 ? 'running' : 'complete', result: { text: 'x' } }), { status: 200, headers: { 'content-type': 'application/json' } });
      },
    });
    const done = await waitForParse(fake, 'b_0000000000000000', '00000000-0000-4000-8000-000000000000', { intervalMs: 20, maxIntervalMs: 40 });
    expect(done.status).toBe('complete');
    expect(polls).toHaveLength(4);
    const gaps = polls.slice(1).map((t, i) => t - polls[i]);
    expect(gaps[0]).toBeGreaterThanOrEqual(15);
    expect(gaps[2]).toBeGreaterThanOrEqual(35);
    n = -1000;
    const slow = await waitForParse(fake, 'b_0000000000000000', '00000000-0000-4000-8000-000000000000', { intervalMs: 10, timeoutMs: 60 }).catch((e: unknown) => e);
    expect(slow).toBeInstanceOf(ParseTimeoutError);
    expect((slow as ParseTimeoutError).record).toMatchObject({ status: 'running' });
    const a = await register();
    await expect(waitForParse(a.client, 'b_0000000000000000', '00000000-0000-4000-8000-000000000000')).rejects.toMatchObject({ status: 404, errorCode: 'BLOB_NOT_FOUND' });
  });
});

describe('walking lists', () => {
  test('directory: every listed agent once, over keyset pages joined by next_cursor (limit 2: three pages for five agents)', async () => {
    const domain = `sdk-${Date.now()}`;
    const listed: string[] = [];
    for (let i = 0; i < 5; i++) {
      const a = await register();
      await ok(a.client.POST('/v1/agents/passport/description', { body: { listed: true, bio: `Agent ${i} of the SDK test.`, domain } }));
      listed.push(a.agentId);
    }
    const unlisted = await register();
    const pages = await collect(directoryPages(createSvcClient({ baseUrl: svc.url }), { limit: 2, domain }));
    expect(pages.map((p) => p.agents.length)).toEqual([2, 2, 1]);
    expect(pages[2].next_cursor).toBeNull();
    const walked = (await collect(directory(createSvcClient({ baseUrl: svc.url }), { limit: 2, domain }))).map((x) => x.agent_id);
    expect([...walked].sort()).toEqual([...listed].sort());
    expect(walked).not.toContain(unlisted.agentId);
    expect(await collect(directory(createSvcClient({ baseUrl: svc.url }), { limit: 2, domain }), 3)).toHaveLength(3);
    const cursors = svc.requests.filter((r) => r.url.startsWith('/v1/agents?') && r.url.includes(`domain=${domain}`)).map((r) => new URL(r.url, svc.url).searchParams.has('cursor'));
    expect(cursors.slice(0, 3)).toEqual([false, true, true]);
  });

  test('memoryKeys and blobs: every item over numbered pages, without asking for a page past the end', async () => {
    const a = await register();
    for (let i = 0; i < 7; i++) await ok(a.client.PUT('/v1/memory/{key}', { params: { path: { key: `walk.${i}` } }, body: { value: i } }));
    await ok(a.client.PUT('/v1/memory/{key}', { params: { path: { key: 'other' } }, body: { value: 'x' } }));
    const from = svc.requests.length;
    const keys = await collect(memoryKeys(a.client, { prefix: 'walk.', per_page: 3 }));
    expect(keys.map((k) => k.key).sort()).toEqual(Array.from({ length: 7 }, (_, i) => `walk.${i}`));
    expect(svc.requests.slice(from).map((r) => new URL(r.url, svc.url).searchParams.get('page'))).toEqual(['1', '2', '3']);
    // Exactly a multiple of the page size: no empty page asked for.
    const from2 = svc.requests.length;
    expect(await collect(memoryKeys(a.client, { prefix: 'walk.', per_page: 7 }))).toHaveLength(7);
    expect(svc.requests.length - from2).toBe(1);
    for (let i = 0; i < 3; i++) await uploadBlob(a.client, { data: Buffer.from(`blob ${i}`), filename: `b${i}.txt` });
    const all = await collect(blobs(a.client, { per_page: 2 }));
    expect(all.map((b) => b.filename).sort()).toEqual(['b0.txt', 'b1.txt', 'b2.txt']);
    expect(await collect(memoryKeys(a.client, { prefix: 'none.' }))).toEqual([]);
  });
});

describe('blob bytes', () => {
  test('uploadBlob streams a file as multipart (name and type kept, progress to the total); the same bytes again: created false; downloadBlob writes and checks them', async () => {
    const a = await register();
    const bytes = Buffer.alloc(3 * 1024 * 1024 + 17);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919) % 251;
    const file = join(work, 'data.bin');
    writeFileSync(file, bytes);
    const progress: Array<[number, number | undefined]> = [];
    const up = await uploadBlob(a.client, { path: file, filename: 'Übersicht "Q3".bin', onProgress: (d, t) => progress.push([d, t]) });
    expect(up).toMatchObject({ size_bytes: bytes.length, content_type: 'application/octet-stream', created: true, sha256: createHash('sha256').update(bytes).digest('hex') });
    expect(progress[0]).toEqual([0, bytes.length]);
    expect(progress[progress.length - 1]).toEqual([bytes.length, bytes.length]);
    expect(progress.length).toBeGreaterThan(3);
    expect((await uploadBlob(a.client, { path: file })).created).toBe(false);
    const meta = await ok(a.client.GET('/v1/blobs/{blob_id}/meta', { params: { path: { blob_id: up.blob_id } } }));
    expect(meta.filename).toBe('data.bin');

    const seen: number[] = [];
    const out = join(work, 'copy.bin');
    const got = await downloadBlob(a.client, up.blob_id, out, { onProgress: (d) => seen.push(d) });
    expect(readFileSync(out).equals(bytes)).toBe(true);
    expect(got).toMatchObject({ bytes: bytes.length, sha256: up.sha256, filename: 'data.bin', path: out });
    expect(seen[seen.length - 1]).toBe(bytes.length);
    const chunks: Buffer[] = [];
    await downloadBlob(a.client, up.blob_id, new Writable({ write(c: Buffer, _e, cb) { chunks.push(c); cb(); } }));
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
  });

  test('a file name with quotes and non-ASCII letters survives the round trip; a download of another agent\'s blob is 404 and leaves no file', async () => {
    const a = await register();
    const b = await register();
    const up = await uploadBlob(a.client, { data: Buffer.from('hello'), filename: 'Übersicht "Q3".txt' });
    const meta = await ok(a.client.GET('/v1/blobs/{blob_id}/meta', { params: { path: { blob_id: up.blob_id } } }));
    expect(meta).toMatchObject({ filename: 'Übersicht "Q3".txt', content_type: 'text/plain' });
    const got = await downloadBlob(a.client, up.blob_id, join(work, 'u.txt'));
    expect(got.filename).toBe(meta.filename);
    const target = join(work, 'not-mine.txt');
    await expect(downloadBlob(b.client, up.blob_id, target)).rejects.toMatchObject({ status: 404, errorCode: 'BLOB_NOT_FOUND' });
    expect(() => readFileSync(target)).toThrow(/ENOENT/);
  });

  test('a download whose bytes do not match the ETag\'s SHA-256 is refused and leaves no file', async () => {
    const a = await register();
    const up = await uploadBlob(a.client, { data: Buffer.from('the real bytes') });
    const lying = createSvcClient({
      baseUrl: svc.url, apiKey: a.apiKey,
      fetch: async (req) => {
        const res = await fetch(req);
        if (!req.url.includes(`/v1/blobs/${up.blob_id}`)) return res;
        const headers = new Headers(res.headers);
        headers.set('content-length', '14');
        return new Response('the fake bytes', { status: 200, headers });
      },
    });
    const target = join(work, 'lie.txt');
    await expect(downloadBlob(lying, up.blob_id, target)).rejects.toBeInstanceOf(SvcProtocolError);
    expect(() => readFileSync(target)).toThrow(/ENOENT/);
  });

  test('Content-Disposition names and safe local names', () => {
    expect(dispositionFilename('attachment; filename="a b.pdf"')).toBe('a b.pdf');
    expect(dispositionFilename(`attachment; filename="x.txt"; filename*=UTF-8''%C3%9Cbersicht.txt`)).toBe('Übersicht.txt');
    expect(dispositionFilename('attachment')).toBeNull();
    expect(safeFilename('../../.bashrc')).toBe('.bashrc');
    expect(safeFilename('..\\..\\evil.exe')).toBe('evil.exe');
    expect(safeFilename('a\u0000b\n.txt')).toBe('ab.txt');
    expect(safeFilename('..')).toBeNull();
    expect(safeFilename('/')).toBeNull();
    expect(safeFilename(null)).toBeNull();
  });
});
