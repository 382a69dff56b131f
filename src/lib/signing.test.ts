import { createHash, createPrivateKey, sign } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { verifyEd25519 } from './ed25519';
import {
  consolidationAmendPayload, contentSha256, covenantAmendPayload, custodyTransferPayload, policyBindingAmendPayload, recoveryCompletePayload, recoveryInitiatePayload,
  recoveryIntentPayload, recoveryVetoPayload, signedRequestPayload,
} from './signing';

// The worked example of docs/trust.md ("Signed requests"), byte for byte.
const AGENT = '3F2504E0-4F89-41D3-9A0C-0305E82C3301';
const CHALLENGE = '9b2e4c1a-7d3f-4e8a-b5c6-1a2b3c4d5e6f';
const NONCE = 'q0cVN3yHqf3G4n2tC8yPZb7sX1uWm5Le9rTa6dKjHgA';

describe('signed request payloads', () => {
  test('content_sha256 is the SHA-256 of the RFC 8785 bytes (keys sorted, no whitespace)', () => {
    const jcs = '{"binding_type":"tool_allow_list","params":{"allowed_tools":["svc_memory","svc_search"]}}';
    expect(contentSha256({ params: { allowed_tools: ['svc_memory', 'svc_search'] }, binding_type: 'tool_allow_list' }))
      .toBe(createHash('sha256').update(jcs, 'utf8').digest('hex'));
  });

  test('policy binding amend: five lines, agent and challenge ids lowercased, no trailing newline', () => {
    const p = policyBindingAmendPayload({ agentId: AGENT, challengeId: CHALLENGE, nonce: NONCE, bindingType: 'tool_allow_list', params: { allowed_tools: ['svc_memory', 'svc_search'] } });
    const digest = createHash('sha256').update('{"binding_type":"tool_allow_list","params":{"allowed_tools":["svc_memory","svc_search"]}}').digest('hex');
    expect(p).toBe([
      'svc.policy_binding.amend.v1',
      'agent_id:3f2504e0-4f89-41d3-9a0c-0305e82c3301',
      `challenge_id:${CHALLENGE}`,
      `nonce:${NONCE}`,
      `content_sha256:${digest}`,
    ].join('\n'));
    expect(p.endsWith('\n')).toBe(false);
  });

  test('consolidation amend binds template_id and params; other params give other bytes', () => {
    const base = { agentId: AGENT, challengeId: CHALLENGE, nonce: NONCE, templateId: 'consolidation-v1' };
    const a = consolidationAmendPayload({ ...base, params: { schema_version: 1 } });
    const b = consolidationAmendPayload({ ...base, params: { schema_version: 2 } });
    expect(a.split('\n')[0]).toBe('svc.consolidation.amend.v1');
    expect(a).not.toBe(b);
    expect(a).toBe(signedRequestPayload('svc.consolidation.amend.v1', { agentId: AGENT, challengeId: CHALLENGE, nonce: NONCE, content: { template_id: 'consolidation-v1', params: { schema_version: 1 } } }));
  });

  test('the scheme name is bound: the same content under another scheme gives other bytes', () => {
    const f = { agentId: AGENT, challengeId: CHALLENGE, nonce: NONCE, content: { x: 1 } };
    expect(signedRequestPayload('svc.covenant.amend.v1', f)).not.toBe(signedRequestPayload('svc.consolidation.amend.v1', f));
  });
});

describe('custody schemes and the worked example of docs/trust.md ("Signed requests", signature included)', () => {
  // RFC 8032 test 1 secret key, as PKCS#8 PEM: Ed25519 signatures are deterministic, so the bytes below reproduce.
  const KEY = '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g\n-----END PRIVATE KEY-----\n';
  const PUB = '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n-----END PUBLIC KEY-----\n';
  const base = { agentId: AGENT, challengeId: CHALLENGE, nonce: NONCE };

  test('covenant amend: JCS bytes, their SHA-256, the five lines and the signature as documented', () => {
    const params = { successor_agent_id: '6ba7b810-9dad-41d1-80b4-00c04fd430c8' };
    expect(contentSha256({ template_id: 'successor-later', params })).toBe('3d51487b329963f021523e4169c7daae9dc229e8419a4e6fb165a9b3f8000c61');
    const p = covenantAmendPayload({ ...base, templateId: 'successor-later', params });
    expect(p).toBe('svc.covenant.amend.v1\nagent_id:3f2504e0-4f89-41d3-9a0c-0305e82c3301\nchallenge_id:9b2e4c1a-7d3f-4e8a-b5c6-1a2b3c4d5e6f\nnonce:q0cVN3yHqf3G4n2tC8yPZb7sX1uWm5Le9rTa6dKjHgA\ncontent_sha256:3d51487b329963f021523e4169c7daae9dc229e8419a4e6fb165a9b3f8000c61');
    const signature = sign(null, Buffer.from(p, 'utf8'), createPrivateKey(KEY)).toString('base64');
    expect(signature).toBe('tmobT0tdc3YRxn5xcwCWd2FUReZ5KbYEEcwAaSilgkMMKZPnRnIC1t8xtkUJPhXKh2dTnOo/DtfXfynzuE0DCQ==');
    expect(verifyEd25519(PUB, Buffer.from(p, 'utf8'), signature)).toBe(true);
  });

  test('each recovery and custody scheme binds its own name and content', () => {
    const intent = recoveryIntentPayload({ ...base, newPassportPublicKey: PUB });
    expect(intent).toBe(signedRequestPayload('svc.recovery.intent.v1', { ...base, content: { agent_id: AGENT, new_passport_public_key: PUB } }));
    expect(recoveryInitiatePayload(base)).toBe(signedRequestPayload('svc.recovery.initiate.v1', { ...base, content: { agent_id: AGENT } }));
    const id = '6ba7b810-9dad-41d1-80b4-00c04fd430c8';
    expect(recoveryVetoPayload({ ...base, intentId: id }).split('\n')[0]).toBe('svc.recovery.veto.v1');
    expect(recoveryCompletePayload({ ...base, intentId: id }).split('\n')[0]).toBe('svc.recovery.complete.v1');
    expect(recoveryVetoPayload({ ...base, intentId: id }).split('\n').slice(1)).toEqual(recoveryCompletePayload({ ...base, intentId: id }).split('\n').slice(1));
    const transfer = custodyTransferPayload({ ...base, incomingOwnerIdentifier: 'o', incomingPublicKeyPem: PUB });
    expect(transfer).toBe(signedRequestPayload('svc.custody.transfer.v1', { ...base, content: { incoming_owner_identifier: 'o', incoming_public_key: PUB } }));
  });
});
