/**
 * Identity audit: registration field rules, the challenge → verify exchange and Bearer parsing,
 * against the API's registration, authentication and limit rules and docs/api.md / docs/decisions.md.
 */
import { generateKeyPairSync } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generateEd25519, signEd25519 } from '../src/lib/ed25519';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ listen: true });
});
afterAll(async () => t?.close());

let n = 0;
const base = (extra: Record<string, unknown> = {}) => ({
  agent_name: `audit-${++n}`, owner_identifier: `audit-owner-${n}`, agree_to_terms: true, ...extra,
});

/** One HTTP/1.1 request written byte for byte on a socket (repeated headers as given). */
function rawHttp(method: string, path: string, headers: [string, string][]): Promise<{ status: number; body: any }> {
  const u = new URL(t.url);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(u.port), u.hostname);
    let data = '';
    sock.on('data', (c) => (data += c.toString('utf8')));
    sock.on('error', reject);
    sock.on('close', () => {
      const text = data.slice(data.indexOf('\r\n\r\n') + 4);
      let body: any = text;
      try { body = JSON.parse(text); } catch { /* not JSON */ }
      resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(data)?.[1]), body });
    });
    const lines = [`${method} ${path} HTTP/1.1`, `Host: ${u.host}`, 'Connection: close', ...headers.map(([k, v]) => `${k}: ${v}`)];
    sock.write(`${lines.join('\r\n')}\r\n\r\n`);
  });
}

/** A fresh challenge, signed and verified; `layout` rewrites the base64 signature before it is sent. */
async function sessionOf(agentId: string, privateKeyPem: string, layout: (signature: string) => string = (s) => s) {
  const c = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: agentId } })).body;
  return t.request('POST', '/v1/auth/passport/verify', {
    body: { agent_id: agentId, challenge_id: c.challenge_id, signature: layout(signEd25519(privateKeyPem, Buffer.from(c.sign_payload, 'utf8'))) },
  });
}

describe('register: owner_identifier that is only blank', () => {
  // docs/decisions.md: "An owner identifier of only whitespace is refused"; docs/api.md: blank means
  // Unicode whitespace (NEL included) and control characters. `\S` let U+0085 and C0 controls through.
  test.each([['NEL', '\u0085'], ['NEL and space', ' \u0085 '], ['C0 control', '\u0001'], ['DEL', '\u007f\u007f']])('%s → 422 INVALID_OWNER_IDENTIFIER', async (_name, owner) => {
    const res = await t.request('POST', '/v1/register', { body: base({ owner_identifier: owner }) });
    expect([res.status, res.body.error_code, res.body.field]).toEqual([422, 'INVALID_OWNER_IDENTIFIER', 'body.owner_identifier']);
  });

  test('an owner with text around a control or NEL is still taken, exactly as sent', async () => {
    const res = await t.request('POST', '/v1/register', { body: base({ owner_identifier: 'me\u0085@example.com' }) });
    expect(res.status).toBe(201);
    expect((await t.request('GET', '/v1/me', { token: res.body.api_key })).body.owner_identifier).toBe('me\u0085@example.com');
  });
});

describe('register: PEM and base64 keys with whitespace (RFC 7468 lax: parsers SHOULD ignore whitespace)', () => {
  const k = generateEd25519();
  const canonical = k.publicKeyPem.trim();
  const rawB64 = Buffer.from(canonical.replace(/-----[^-]+-----|\s/g, ''), 'base64').subarray(12).toString('base64');
  const variants: [string, string][] = [
    ['indented lines (YAML block, heredoc)', canonical.split('\n').map((l) => `    ${l}`).join('\n')],
    ['one line, no breaks (flattened env var)', canonical.replace(/\n/g, '')],
    ['newlines turned into spaces', canonical.replace(/\n/g, ' ')],
    ['CR-only newlines', canonical.replace(/\n/g, '\r')],
    ['base64 wrapped at 64 and trailing spaces', canonical.replace(/\n/g, '  \r\n')],
  ];

  test.each(variants)('passport_public_key: %s → 201, stored as the canonical PEM, and it opens sessions', async (_name, pem) => {
    const res = await t.request('POST', '/v1/register', { body: base({ passport_public_key: pem }) });
    expect([res.status, res.body.error_code]).toEqual([201, undefined]);
    expect(res.body.passport.public_key.trim()).toBe(canonical);
    expect(res.body.passport.derivation_method).toBe('operator_derived');
    const v = await sessionOf(res.body.agent_id, k.privateKeyPem);
    expect(v.status).toBe(200);
  });

  test.each(variants)('recovery_public_key: %s → 201, recovery enrolled', async (_name, pem) => {
    const res = await t.request('POST', '/v1/register', { body: base({ recovery_public_key: pem }) });
    expect([res.status, res.body.error_code]).toEqual([201, undefined]);
    expect(res.body.recovery).toMatchObject({ enrolled: true, covenant_template_id: 'owner-recovery-key' });
  });

  test('base64 of the raw 32 bytes wrapped over two lines → 201, same key', async () => {
    const res = await t.request('POST', '/v1/register', { body: base({ passport_public_key: `${rawB64.slice(0, 22)}\n${rawB64.slice(22)}\n` }) });
    expect(res.status).toBe(201);
    expect(res.body.passport.public_key.trim()).toBe(canonical);
  });

  test('still refused: other curves and types, wrong lengths, a private key however it is laid out, garbage', async () => {
    const pemOf = (type: 'x25519' | 'ed448') => generateKeyPairSync(type as 'x25519').publicKey.export({ format: 'pem', type: 'spki' }).toString();
    const bad = [
      pemOf('x25519'), pemOf('ed448'),
      generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'pem', type: 'spki' }).toString(),
      generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'pem', type: 'pkcs1' }).toString(),
      pemOf('x25519').replace(/\n/g, ' '),
      Buffer.alloc(64, 7).toString('base64'), Buffer.alloc(33, 7).toString('base64'), Buffer.alloc(31, 7).toString('base64'),
      canonical.replace(/\n/g, '\\n'), // literal backslash-n: not PEM
      canonical.replace(/\n/g, '').replace('BEGIN PUBLIC KEY', 'BEGIN PUBLIC  KEY'),
      '-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----', '   ', '',
    ];
    for (const key of bad) {
      const res = await t.request('POST', '/v1/register', { body: base({ passport_public_key: key }) });
      expect([res.status, res.body.error_code], JSON.stringify(key).slice(0, 80)).toEqual([422, 'INVALID_PASSPORT_PUBLIC_KEY']);
    }
    for (const priv of [k.privateKeyPem, k.privateKeyPem.replace(/\n/g, ' '), k.privateKeyPem.split('\n').map((l) => `  ${l}`).join('\n')]) {
      const res = await t.request('POST', '/v1/register', { body: base({ passport_public_key: priv }) });
      expect([res.status, res.body.error_code]).toEqual([422, 'INVALID_PASSPORT_PUBLIC_KEY']);
      expect(res.body.message).toMatch(/private key/);
      const rec = await t.request('POST', '/v1/register', { body: base({ recovery_public_key: priv }) });
      expect([rec.status, rec.body.error_code]).toEqual([422, 'INVALID_RECOVERY_PUBLIC_KEY']);
    }
  });
});

describe('verify: a line-wrapped base64 signature (RFC 2045 / 7468: whitespace inside base64 is ignored, as for keys)', () => {
  const wrap = (s: string, width: number, eol: string) => (s.match(new RegExp(`.{1,${width}}`, 'g')) ?? []).join(eol);
  const variants: [string, (s: string) => string][] = [
    ['wrapped at 76 with CRLF (RFC 2045)', (s) => wrap(s, 76, '\r\n')],
    ['wrapped at 64 with LF and a trailing newline (RFC 7468)', (s) => `${wrap(s, 64, '\n')}\n`],
    ['CR-only line breaks, indented', (s) => `  ${wrap(s, 20, '\r  ')}`],
    ['split by spaces and tabs, padding set apart', (s) => `${wrap(s.slice(0, -2), 8, ' ')}\t${s.slice(-2, -1)} ${s.slice(-1)}`],
    ['url-safe alphabet, wrapped', (s) => wrap(s.replace(/\+/g, '-').replace(/\//g, '_'), 30, '\n')],
  ];

  test.each(variants)('signature %s → 200 and a session', async (_name, layout) => {
    const a = await t.registerAgent();
    const v = await sessionOf(a.agentId, a.privateKeyPem, layout);
    expect([v.status, v.body.error_code]).toEqual([200, undefined]);
    expect(v.body.session_token).toMatch(/^svc_session_/);
  });

  test('still refused, 401 PASSPORT_SIGNATURE_INVALID: wrong alphabet, padding inside, wrong decoded length, only whitespace', async () => {
    const a = await t.registerAgent();
    const bytes = (s: string) => Buffer.from(s, 'base64');
    const bad: [string, (s: string) => string][] = [
      ['a "*" at a line break', (s) => `${s.slice(0, 40)}*\r\n${s.slice(40)}`],
      ['a "." in a wrapped line', (s) => wrap(`${s.slice(0, 10)}.${s.slice(11)}`, 64, '\n')],
      ['padding inside, then more base64', (s) => `${s.slice(0, 40)}=\n${s.slice(40)}`],
      ['63 bytes, wrapped', (s) => wrap(bytes(s).subarray(0, 63).toString('base64'), 76, '\r\n')],
      ['65 bytes, wrapped', (s) => wrap(Buffer.concat([bytes(s), Buffer.from([0])]).toString('base64'), 76, '\r\n')],
      ['only whitespace', () => ' \r\n\t '],
    ];
    for (const [what, layout] of bad) {
      const v = await sessionOf(a.agentId, a.privateKeyPem, layout);
      expect([v.status, v.body.error_code], what).toEqual([401, 'PASSPORT_SIGNATURE_INVALID']);
    }
  });
});

describe('two Authorization headers, whatever they hold → 401 (docs/api.md)', () => {
  let a: RegisteredAgent;
  beforeAll(async () => {
    a = await t.registerAgent();
  });

  test('an empty first header and a valid key second: refused on optional and key routes alike', async () => {
    for (const path of ['/v1/capabilities', '/v1/me']) {
      for (const headers of [
        [['Authorization', ''], ['Authorization', `Bearer ${a.apiKey}`]],
        [['Authorization', `Bearer ${a.apiKey}`], ['authorization', '']],
        [['Authorization', ''], ['Authorization', '']],
      ] as [string, string][][]) {
        const res = await rawHttp('GET', path, headers);
        expect([res.status, res.body.error_code], `${path} ${JSON.stringify(headers.map((h) => h[1].slice(0, 8)))}`).toEqual([401, 'INVALID_API_KEY']);
      }
    }
  });

  test('one header behaves as before: empty is no key (optional route answers, key route 401), a valid key passes', async () => {
    expect((await rawHttp('GET', '/v1/capabilities', [['Authorization', '']])).status).toBe(200);
    expect((await rawHttp('GET', '/v1/me', [['Authorization', '']])).body.error_code).toBe('INVALID_API_KEY');
    const me = await rawHttp('GET', '/v1/me', [['Authorization', `Bearer ${a.apiKey}`]]);
    expect([me.status, me.body.agent_id]).toEqual([200, a.agentId]);
    expect((await rawHttp('GET', '/v1/capabilities', [['Authorization', `Bearer ${a.apiKey}`]])).status).toBe(200);
  });
});

describe('areas found sound (kept as regression checks)', () => {
  test('10 parallel identical registrations: exactly one 201, nine 409 AGENT_ALREADY_REGISTERED', async () => {
    const body = base();
    const res = await Promise.all(Array.from({ length: 10 }, () => t.request('POST', '/v1/register', { body })));
    expect(res.filter((r) => r.status === 201)).toHaveLength(1);
    expect(res.filter((r) => r.status === 409 && r.body.error_code === 'AGENT_ALREADY_REGISTERED')).toHaveLength(9);
  });

  test('case and Unicode-form variants are different pairs (docs/decisions.md: compared exactly as sent)', async () => {
    const owner = `o-${n}-caf\u00e9`;
    expect((await t.request('POST', '/v1/register', { body: { agent_name: 'Case-Agent', owner_identifier: owner, agree_to_terms: true } })).status).toBe(201);
    expect((await t.request('POST', '/v1/register', { body: { agent_name: 'case-agent', owner_identifier: owner, agree_to_terms: true } })).status).toBe(201);
    expect((await t.request('POST', '/v1/register', { body: { agent_name: 'Case-Agent', owner_identifier: owner.normalize('NFD'), agree_to_terms: true } })).status).toBe(201);
    expect((await t.request('POST', '/v1/register', { body: { agent_name: 'Case-Agent', owner_identifier: owner, agree_to_terms: true } })).status).toBe(409);
  });

  test('10 parallel verifies of one challenge: exactly one session', async () => {
    const a = await t.registerAgent();
    const c = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: a.agentId } })).body;
    const body = { agent_id: a.agentId, challenge_id: c.challenge_id, signature: signEd25519(a.privateKeyPem, Buffer.from(c.sign_payload)) };
    const res = await Promise.all(Array.from({ length: 10 }, () => t.request('POST', '/v1/auth/passport/verify', { body })));
    expect(res.filter((r) => r.status === 200)).toHaveLength(1);
    expect(res.filter((r) => r.status === 409 && r.body.error_code === 'CHALLENGE_ALREADY_USED')).toHaveLength(9);
  });

  test('a session lives exactly 3600 s and never passes a root route', async () => {
    const a = await t.registerAgent();
    const v = await sessionOf(a.agentId, a.privateKeyPem);
    expect(v.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
    const token = v.body.session_token as string;
    expect(token).toMatch(/^svc_session_/);
    expect(Date.parse(v.body.expires_at) - t.clock.now()).toBe(3_600_000);
    const root = await t.request('POST', '/v1/me/passport/revoke', { token });
    expect([root.status, root.body.error_code]).toEqual([403, 'ROOT_KEY_REQUIRED']);
    t.clock.advance(3_599_999);
    expect((await t.request('GET', '/v1/me', { token })).status).toBe(200);
    t.clock.advance(1);
    expect((await t.request('GET', '/v1/me', { token })).body.error_code).toBe('INVALID_API_KEY');
  });
});
