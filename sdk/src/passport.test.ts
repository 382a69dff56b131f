/**
 * The signed bytes the SDK builds, against the worked example of docs/trust.md ("Signed requests":
 * RFC 8032's test key, whose signature openssl reproduces) and the challenge layout of docs/api.md,
 * and signatures checked by `openssl pkeyutl -verify`, which shares no code with the SDK.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { SvcProtocolError } from './client';
import {
  challengePayload, contentSha256, generatePassportKeys, privateKeyOf, publicKeyPemOf, signChallenge, signedRequestPayload, signPayload, type Challenge,
} from './passport';

const RFC8032_KEY = '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g\n-----END PRIVATE KEY-----\n';

function opensslVerifies(publicKeyPem: string, payload: string, signatureB64: string): boolean {
  const dir = mkdtempSync(join(tmpdir(), 'svc-sdk-verify-'));
  try {
    writeFileSync(join(dir, 'pub.pem'), publicKeyPem);
    writeFileSync(join(dir, 'payload.bin'), payload);
    writeFileSync(join(dir, 'sig.bin'), Buffer.from(signatureB64, 'base64'));
    try {
      execFileSync('openssl', ['pkeyutl', '-verify', '-pubin', '-inkey', join(dir, 'pub.pem'), '-rawin', '-in', join(dir, 'payload.bin'), '-sigfile', join(dir, 'sig.bin')], { stdio: 'pipe' });
      return true;
    } catch {
      return false;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('signed request bytes', () => {
  test('the worked example of docs/trust.md: the content digest, the five lines and the signature, byte for byte', () => {
    const content = { template_id: 'successor-later', params: { successor_agent_id: '6ba7b810-9dad-41d1-80b4-00c04fd430c8' } };
    expect(contentSha256(content)).toBe('3d51487b329963f021523e4169c7daae9dc229e8419a4e6fb165a9b3f8000c61');
    const payload = signedRequestPayload('svc.covenant.amend.v1', {
      agentId: '3F2504E0-4F89-41D3-9A0C-0305E82C3301', challengeId: '9b2e4c1a-7d3f-4e8a-b5c6-1a2b3c4d5e6f',
      nonce: 'q0cVN3yHqf3G4n2tC8yPZb7sX1uWm5Le9rTa6dKjHgA', content,
    });
    expect(payload).toBe('svc.covenant.amend.v1\nagent_id:3f2504e0-4f89-41d3-9a0c-0305e82c3301\nchallenge_id:9b2e4c1a-7d3f-4e8a-b5c6-1a2b3c4d5e6f\nnonce:q0cVN3yHqf3G4n2tC8yPZb7sX1uWm5Le9rTa6dKjHgA\ncontent_sha256:3d51487b329963f021523e4169c7daae9dc229e8419a4e6fb165a9b3f8000c61');
    expect(signPayload(RFC8032_KEY, payload)).toBe('tmobT0tdc3YRxn5xcwCWd2FUReZ5KbYEEcwAaSilgkMMKZPnRnIC1t8xtkUJPhXKh2dTnOo/DtfXfynzuE0DCQ==');
  });

  test('key order, whitespace and number forms do not change the digest (RFC 8785); values that have no JSON form throw', () => {
    expect(contentSha256({ b: 1, a: [1.0, 'x'] })).toBe(contentSha256(JSON.parse('{ "a" : [ 1, "x" ], "b" : 1.00 }')));
    expect(() => contentSha256(undefined)).toThrow(TypeError);
  });
});

describe('keys and challenges', () => {
  const challenge = (over: Partial<Challenge> = {}): Challenge => {
    const c = {
      agent_id: '36aa5131-032d-44e0-b436-ef5c6fa26796', challenge_id: '448fe3e0-e4c5-4a9f-b2bd-e0e6588fbe72',
      challenge_nonce: 'Z6PtfYWa63uxRZdGdK-nZwT7y3v8HhbaZAMoX-mr6NA', issued_at: '2026-11-27T07:53:15.651Z', expires_at: '2026-11-27T07:58:15.651Z',
      purpose: 'session', sign_payload: '', ...over,
    };
    return { ...c, sign_payload: over.sign_payload ?? challengePayload(c) };
  };

  test('the challenge bytes are the six documented lines; the signature verifies with openssl under the generated public key', () => {
    const keys = generatePassportKeys();
    expect(keys.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(publicKeyPemOf(keys.privateKeyPem)).toBe(keys.publicKeyPem);
    const c = challenge();
    expect(c.sign_payload).toBe([
      'svc.passport.challenge.v1', `agent_id:${c.agent_id}`, `challenge_id:${c.challenge_id}`, `nonce:${c.challenge_nonce}`,
      `issued_at:${c.issued_at}`, `expires_at:${c.expires_at}`,
    ].join('\n'));
    const sig = signChallenge(c, keys.privateKeyPem);
    expect(Buffer.from(sig, 'base64')).toHaveLength(64);
    expect(opensslVerifies(keys.publicKeyPem, c.sign_payload, sig)).toBe(true);
    expect(opensslVerifies(keys.publicKeyPem, `${c.sign_payload}\n`, sig)).toBe(false);
  });

  test('a sign_payload other than the bytes of the challenge\'s own fields is not signed (a server cannot slip other bytes in)', () => {
    const keys = generatePassportKeys();
    const custody = 'svc.custody.transfer.v1\nagent_id:36aa5131-032d-44e0-b436-ef5c6fa26796\nchallenge_id:x\nnonce:y\ncontent_sha256:z';
    expect(() => signChallenge(challenge({ sign_payload: custody }), keys.privateKeyPem)).toThrow(SvcProtocolError);
    expect(() => signChallenge(challenge({ sign_payload: `${challengePayload(challenge())}\n` }), keys.privateKeyPem)).toThrow(/not signed/);
  });

  test('only Ed25519 private keys are taken', () => {
    expect(() => privateKeyOf(generatePassportKeys().publicKeyPem)).toThrow();
    expect(() => privateKeyOf('not a key')).toThrow();
  });
});
