import { createHash } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { consolidationAmendPayload, contentSha256, policyBindingAmendPayload, signedRequestPayload } from './signing';

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
