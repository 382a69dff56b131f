import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { checkpointBody, keyId, openNote, parseVerifierKey, signNote, verifierKey, verifyNote } from './checkpoint';

// Reference keys, text and signatures: golang.org/x/mod, sumdb/note/note_test.go (TestSign, TestOpen);
// the vkey is also the example of the C2SP signed-note spec. Ed25519 is deterministic (RFC 8032), so
// signing the text with the published key must reproduce the published note byte for byte.
const PETER_VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const PETER_SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const ENOCH_VKEY = 'EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop';
const TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const PETER_SIG = '— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n';
const ENOCH_SIG = '— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n';

/** An Ed25519 private KeyObject from a 32-byte seed (PKCS#8 DER: fixed prefix, then the seed). */
const fromSeed = (seed: Buffer): KeyObject =>
  createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
const peterPrivate = () => {
  const b = Buffer.from(PETER_SKEY.split('+').slice(4).join('+'), 'base64'); // the base64 itself holds a '+'
  expect(b[0]).toBe(1); // algorithm byte: Ed25519
  return fromSeed(b.subarray(1));
};

describe('signed-note reference example (golang.org/x/mod/sumdb/note)', () => {
  test('key ID c74f20a3 from the name and the raw public key bytes of the published vkey', () => {
    const raw = Buffer.from(PETER_VKEY.split('+')[2], 'base64').subarray(1);
    expect(raw.length).toBe(32);
    expect(keyId('PeterNeumann', raw).toString('hex')).toBe('c74f20a3');
    expect(keyId('EnochRoot', Buffer.from(ENOCH_VKEY.split('+')[2], 'base64').subarray(1)).toString('hex')).toBe('af0cfe78');
  });

  test('the published skey yields the published vkey and, signing, the published note', () => {
    const priv = peterPrivate();
    expect(verifierKey('PeterNeumann', createPublicKey(priv))).toBe(PETER_VKEY);
    expect(signNote(TEXT, 'PeterNeumann', priv)).toBe(`${TEXT}\n${PETER_SIG}`);
  });

  test('opening the published notes: other keys ignored, a bad signature by the key fails', () => {
    const both = `${TEXT}\n${PETER_SIG}${ENOCH_SIG}`;
    expect(verifyNote(both, PETER_VKEY)).toBe(TEXT);
    expect(verifyNote(both, ENOCH_VKEY)).toBe(TEXT);
    expect(verifyNote(`${TEXT}\n${ENOCH_SIG}`, PETER_VKEY)).toBeNull(); // no signature by this key
    expect(verifyNote(`${TEXT}\n${PETER_SIG.slice(0, 60)}ABCD${PETER_SIG.slice(60)}`, PETER_VKEY)).toBeNull();
    expect(verifyNote(`${TEXT}\n${PETER_SIG}${PETER_SIG.slice(0, 60)}ABCD${PETER_SIG.slice(60)}`, PETER_VKEY)).toBeNull();
    expect(verifyNote(`${TEXT.replace('cryptography', 'cryptographY')}\n${PETER_SIG}`, PETER_VKEY)).toBeNull();
    expect(verifyNote(`${TEXT}\n${PETER_SIG.repeat(101)}`, PETER_VKEY)).toBeNull(); // at most 100 signatures
    // Malformed messages from TestOpen.
    for (const bad of [
      TEXT, `${TEXT}\n`, `${TEXT}\n${PETER_SIG.slice(0, -1)}`, `\x01${TEXT}\n${PETER_SIG}`, `\ud800${TEXT}\n${PETER_SIG}`,
      `${TEXT}\n— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`,
      `${TEXT}\n${PETER_SIG}Unexpected line.\n`,
    ]) expect(verifyNote(bad, PETER_VKEY)).toBeNull();
  });

  test('malformed verifier keys are refused (mangled as in TestNewVerifier)', () => {
    expect(parseVerifierKey(PETER_VKEY).name).toBe('PeterNeumann');
    for (let i = 0; i < PETER_VKEY.length; i++) {
      const mangled = PETER_VKEY.slice(0, i) + String.fromCharCode(PETER_VKEY.charCodeAt(i) + 1) + PETER_VKEY.slice(i + 1);
      expect(() => parseVerifierKey(mangled), mangled).toThrow();
    }
    expect(() => parseVerifierKey(PETER_VKEY.slice(0, -1))).toThrow();
    expect(() => parseVerifierKey('PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==')).toThrow();
    expect(() => parseVerifierKey('PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW')).toThrow();
  });
});

describe('checkpoints', () => {
  const root = Buffer.from('5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328', 'hex');
  const origin = 'svc.example/trust-log';
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const vkey = verifierKey(origin, publicKey);

  test('body format', () => {
    expect(checkpointBody(origin, 8, root)).toBe(`${origin}\n8\nXcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=\n`);
    expect(checkpointBody(origin, 0, Buffer.alloc(32))).toBe(`${origin}\n0\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n`);
    expect(() => checkpointBody('', 1, root)).toThrow();
    expect(() => checkpointBody('a\nb', 1, root)).toThrow();
    expect(() => checkpointBody(origin, -1, root)).toThrow();
    expect(() => checkpointBody(origin, 1, root.subarray(1))).toThrow();
  });

  test('sign then open round-trips; the note has the signed-note shape', () => {
    const note = signNote(checkpointBody(origin, 8, root), origin, privateKey);
    const lines = note.split('\n');
    expect(lines.slice(0, 4)).toEqual([origin, '8', root.toString('base64'), '']);
    expect(lines[4]).toMatch(new RegExp(`^\u2014 ${origin.replace(/[.]/g, '\\.')} [A-Za-z0-9+/]{91}=$`));
    expect(Buffer.from(lines[4].split(' ')[2], 'base64').subarray(0, 4).toString('hex')).toBe(vkey.split('+')[1]);
    const opened = openNote(note, vkey);
    expect(opened).not.toBeNull();
    expect(opened!.origin).toBe(origin);
    expect(opened!.size).toBe(8);
    expect(opened!.root.equals(root)).toBe(true);
  });

  test('a changed body, size, root or signature, or another key, is rejected', () => {
    const note = signNote(checkpointBody(origin, 8, root), origin, privateKey);
    expect(openNote(note.replace('\n8\n', '\n9\n'), vkey)).toBeNull();
    expect(openNote(note.replace(origin, 'svc.example/other-log'), vkey)).toBeNull();
    expect(openNote(note.replace(root.toString('base64'), Buffer.alloc(32).toString('base64')), vkey)).toBeNull();
    const sigStart = note.lastIndexOf(' ') + 10;
    const flipped = note.slice(0, sigStart) + (note[sigStart] === 'A' ? 'B' : 'A') + note.slice(sigStart + 1);
    expect(openNote(flipped, vkey)).toBeNull();
    const other = generateKeyPairSync('ed25519');
    expect(openNote(note, verifierKey(origin, other.publicKey))).toBeNull(); // same name, other key: other key ID
    expect(openNote(signNote(checkpointBody(origin, 8, root), origin, other.privateKey), vkey)).toBeNull();
    expect(openNote(note, verifierKey('other-name', publicKey))).toBeNull();
  });

  test('a cosigned note (an unknown extra signature) still opens; bodies that are no checkpoint do not', () => {
    const note = signNote(checkpointBody(origin, 8, root), origin, privateKey);
    const witness = generateKeyPairSync('ed25519');
    const witnessLine = signNote(checkpointBody(origin, 8, root), 'witness.example', witness.privateKey).split('\n\n')[1];
    expect(openNote(note + witnessLine, vkey)?.size).toBe(8);
    expect(openNote(note + witnessLine, verifierKey('witness.example', witness.publicKey))?.size).toBe(8);
    const open = (body: string) => openNote(signNote(body, origin, privateKey), vkey);
    expect(open(`${origin}\n08\n${root.toString('base64')}\n`)).toBeNull(); // leading zero
    expect(open(`${origin}\n8\n${root.subarray(1).toString('base64')}\n`)).toBeNull(); // 31-byte root
    expect(open(`${origin}\n8\n`)).toBeNull();
    expect(open(`${origin}\n99999999999999999\n${root.toString('base64')}\n`)).toBeNull(); // beyond 2^53
    expect(open(`${origin}\n8\n${root.toString('base64')}\nextension line\n`)?.size).toBe(8);
  });

  test('signing refuses what a verifier could not read back', () => {
    expect(() => signNote('no final newline', origin, privateKey)).toThrow();
    expect(() => signNote('tab\there\n', origin, privateKey)).toThrow();
    expect(() => signNote('ok\n', 'bad name', privateKey)).toThrow();
    expect(() => signNote('ok\n', 'bad+name', privateKey)).toThrow();
    expect(() => signNote('ok\n', origin, publicKey)).toThrow();
  });
});
